"""robo_rl.real.ros: thin rclpy nodes around the deploy core; they convert messages and nothing else.

`policy_node` (lifecycle: policy → safe commands), `teleop_node` (joystick e-stop and takeover), `sim_bridge`
(a robo_rl simulator behind the robot's topics) and `recorder` (topics to a rosbag2 MCAP bag). Each is a console
script of that name; they need rclpy and the ROS message packages (the ros-* wheels of `make ros-venv`, or a ROS 2
installation), and sim_bridge needs torch. Importing this package imports nothing of ROS.
"""
