"""Effect layer: everything that touches a device, a clock or a file."""
