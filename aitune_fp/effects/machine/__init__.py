"""Facts of the machine and the environment, and what is loaded before timing."""
