"""The point/obstacle task: reach a goal around an obstacle, left or right (bimodal demonstrations); its expert and
its presets (`presets.py`)."""

from robo_rl.sim.point_obstacle.task import PointObstacle, PointObstacleConfig

__all__ = ["PointObstacle", "PointObstacleConfig"]
