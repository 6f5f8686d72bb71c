"""PyBullet backend: tasks stepped by PyBullet, one DIRECT-mode physics client per env, behind `BatchedEnv`.

PyBullet has no batched stepping, so an env of `num_envs` copies holds `num_envs` headless physics clients
and steps them in a Python loop; everything after the raw state reads (observation, reward, termination) is
vectorized over the envs with numpy.

The task is `RacecarGoal` (registered as `pybullet/racecar_goal`): the MIT RACECAR model that ships with
pybullet_data (`racecar/racecar.urdf`, a 1/10-scale car with steered front wheels; here rear-wheel drive) drives
to a goal on flat ground. Not pybullet_data's `Quadrotor/quadrotor.urdf`, which is a single rigid
body without rotors or motors: flying it would mean applying forces computed in Python, i.e. re-implementing
`robo_rl.sim.quadrotor` with PyBullet as a rigid-body integrator. The racecar instead exercises what PyBullet
adds (wheel motors, steering joints, tyre contact and friction), and driving to a goal is a small, dense-reward
task that PPO learns.

PyBullet itself is imported lazily (when the first env is built), so `import robo_rl.sim` neither needs it nor
prints its build banner. This package is `robo_rl.sim.pybullet`, never a top-level `pybullet`, and its modules
import PyBullet absolutely, so it cannot shadow the real module.
"""

from robo_rl.sim.pybullet.racecar_goal import RacecarGoal, RacecarGoalConfig

__all__ = ["RacecarGoal", "RacecarGoalConfig"]
