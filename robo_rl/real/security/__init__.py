"""DDS-Security for the robot's graph: a ROS 2 keystore, one enclave per node with exactly its topics, and the
secure mode a node starts in (keystore.py, documents.py, grants.py, secure_mode.py). ROS-free."""
