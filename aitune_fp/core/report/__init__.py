"""Reports as data: summary lines, statistics lines, tables and Markdown of a selection
or a stored run. Nothing here prints; the shell and the CLI decide where text goes."""
