"""Learning on the robot: the env contract for hardware, episodes, success."""
