"""Input devices read without ROS or torch (the Linux joystick interface), shared by training-time teleoperation
(`robo_rl.hil`) and the deploy-side ROS nodes (`robo_rl.real.ros`)."""
