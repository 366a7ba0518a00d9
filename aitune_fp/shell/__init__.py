"""The imperative shell: wires effects to the pure core."""
