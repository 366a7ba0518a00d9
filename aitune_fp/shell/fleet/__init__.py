"""Running fleet plans: job processes, the local and Ray executors, the output folder."""
