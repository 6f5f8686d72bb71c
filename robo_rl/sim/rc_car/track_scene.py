"""A MuJoCo scene of a race track for the RC car's forward camera (the car itself is simulated in torch).

The race's physics stays in `robo_rl.sim.rc_car.dynamics`; MuJoCo only draws. The scene, built in code per track:
a ground plane covering the track with `MARGIN` m around it, textured with an image drawn from the track's geometry
(asphalt with a little noise, white border lines, a dashed centre line, mottled grass outside: texture a camera
can see moving and turning), and the car as a mocap body (a box of the car's size) with the "front" camera at its
nose, `CAMERA_HEIGHT` m up, pitched `CAMERA_PITCH` down. A frame of env `i` is the scene with the car body posed at
the torch car's x, y and yaw.

The texture is rasterized with matplotlib's Agg backend (no antialiasing, so every texel is one class: asphalt,
line, grass) at `TEXEL` m per texel, then noise is added with a fixed seed: the same track always gives the same
bytes. MuJoCo stretches a 2-D texture once over a plane (`texuniform="false"`, `texrepeat="1 1"`); the image's
first row is the plane's +y edge (checked by the tests: a car on the centre line sees asphalt, one in the grass
sees green).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from robo_rl.sim.rc_car.params import CarParams
from robo_rl.sim.rc_car.track import Track

FRONT_CAMERA = "front"
"""The forward camera's name (the only camera of the scene)."""
CAMERA_HEIGHT = 0.15
"""Height in m of the forward camera above the ground."""
CAMERA_PITCH = math.radians(25.0)
"""Downward pitch of the forward camera in rad (with its 70 degree field of view: ground from 0.09 m ahead of the
lens, the horizon 10 degrees below the frame's top)."""
CAMERA_FOVY = 70.0
"""Vertical field of view of the forward camera in degrees."""
TEXEL = 0.025
"""Ground texture resolution in m per texel (the track's border lines are 2-3 texels wide)."""
MARGIN = 1.5
"""Grass in m around the track's bounding box."""
LINE_WIDTH = 0.06
"""Width of the border lines in m."""
_ASPHALT, _LINE, _CENTRE = (90, 90, 95), (235, 235, 235), (230, 200, 60)
_DPI = 100


@dataclass(frozen=True)
class GroundTexture:
    """The ground image `(height, width, 3)` uint8 and the world rectangle it covers, in m."""

    image: np.ndarray
    x_min: float
    y_min: float
    x_max: float
    y_max: float


def ground_texture(track: Track, texel: float = TEXEL, margin: float = MARGIN, seed: int = 0) -> GroundTexture:
    """The textured ground of `track` (module docstring); row 0 is the +y edge, column 0 the -x edge."""
    points = track.points.double().cpu().numpy()
    (x_min, y_min), (x_max, y_max) = points.min(0) - margin, points.max(0) + margin
    width, height = math.ceil((x_max - x_min) / texel), math.ceil((y_max - y_min) / texel)
    x_max, y_max = x_min + width * texel, y_min + height * texel
    labels = _track_labels(track, (x_min, y_min, x_max, y_max), width, height, texel)
    rng = np.random.default_rng(seed)
    image = _grass(rng, height, width)
    asphalt = np.all(labels == _ASPHALT, axis=2)
    image[asphalt] = np.clip(np.array(_ASPHALT) + rng.normal(0.0, 6.0, (int(asphalt.sum()), 1)), 0, 255)
    for colour in (_LINE, _CENTRE):
        image[np.all(labels == colour, axis=2)] = colour
    return GroundTexture(image, float(x_min), float(y_min), float(x_max), float(y_max))


def track_model(track: Track, params: CarParams, max_frame: int = 256) -> mujoco.MjModel:
    """The compiled scene of `track` with a car of `params`' size, its offscreen buffer `max_frame` square."""
    ground = ground_texture(track)
    model = mujoco.MjModel.from_xml_string(_scene_xml(ground, params, max_frame))
    texture = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_TEXTURE, "ground"))
    start = int(model.tex_adr[texture])
    model.tex_data[start : start + ground.image.size] = ground.image.reshape(-1)
    return model


def pose_car(data: mujoco.MjData, x: float, y: float, yaw: float) -> None:
    """Put the scene's car (its mocap body, origin at the CoG on the ground) at `x`, `y` m heading `yaw` rad."""
    data.mocap_pos[0] = (x, y, 0.0)
    data.mocap_quat[0] = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))


def _track_labels(
    track: Track, bounds: tuple[float, float, float, float], width: int, height: int, texel: float
) -> np.ndarray:
    """`(height, width, 3)` uint8 image of the track in flat label colours on black (grass), no antialiasing."""
    figure = Figure(figsize=(width / _DPI, height / _DPI), dpi=_DPI, facecolor="black")
    canvas = FigureCanvasAgg(figure)
    axes = figure.add_axes((0.0, 0.0, 1.0, 1.0))
    axes.set_axis_off()
    axes.set_xlim(bounds[0], bounds[2])
    axes.set_ylim(bounds[1], bounds[3])
    left, right = track.borders()
    surface = np.concatenate((left, left[:1], right[::-1], right[-1:]))
    axes.fill(surface[:, 0], surface[:, 1], facecolor=_hex(_ASPHALT), edgecolor="none", antialiased=False)
    points_per_metre = 72.0 / (_DPI * texel)
    for border in (left, right):
        closed = np.concatenate((border, border[:1]))
        axes.plot(*closed.T, color=_hex(_LINE), linewidth=LINE_WIDTH * points_per_metre, antialiased=False)
    centre = track.points.double().cpu().numpy()
    centre = np.concatenate((centre, centre[:1]))
    axes.plot(
        *centre.T, color=_hex(_CENTRE), linewidth=0.04 * points_per_metre, linestyle=(0, (8, 8)), antialiased=False
    )
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


def _grass(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """Mottled green `(height, width, 3)` uint8: coarse patches (about 0.4 m) plus fine noise per texel."""
    coarse = rng.normal(0.0, 1.0, (height // 16 + 1, width // 16 + 1))
    patches = np.kron(coarse, np.ones((16, 16)))[:height, :width]
    shade = 1.0 + 0.12 * patches + 0.08 * rng.normal(0.0, 1.0, (height, width))
    green = np.array([60.0, 125.0, 50.0])
    return np.clip(shade[..., None] * green, 0, 255).astype(np.uint8)


def _hex(colour: tuple[int, int, int]) -> str:
    return "#" + "".join(f"{c:02x}" for c in colour)


def _scene_xml(ground: GroundTexture, params: CarParams, max_frame: int) -> str:
    height, width = ground.image.shape[:2]
    centre = ((ground.x_min + ground.x_max) / 2, (ground.y_min + ground.y_max) / 2)
    half = ((ground.x_max - ground.x_min) / 2, (ground.y_max - ground.y_min) / 2)
    sin, cos = math.sin(CAMERA_PITCH), math.cos(CAMERA_PITCH)
    nose = params.length / 2 - 0.03
    return f"""
<mujoco model="rc_car_track">
  <statistic extent="2" center="0 0 0"/>
  <visual>
    <global offwidth="{max_frame}" offheight="{max_frame}"/>
    <headlight ambient="0.45 0.45 0.45" diffuse="0.35 0.35 0.35" specular="0 0 0"/>
    <map znear="0.01"/>
  </visual>
  <asset>
    <texture name="ground" type="2d" builtin="flat" width="{width}" height="{height}" rgb1="0 0 0"/>
    <material name="ground" texture="ground" texrepeat="1 1" texuniform="false" specular="0" reflectance="0"/>
    <material name="body" rgba="0.8 0.15 0.15 1" specular="0.2"/>
  </asset>
  <worldbody>
    <light directional="true" dir="0.3 0.2 -1" diffuse="0.3 0.3 0.3" specular="0 0 0" castshadow="false"/>
    <geom name="ground" type="plane" pos="{centre[0]} {centre[1]} 0" size="{half[0]} {half[1]} 0.1" material="ground"/>
    <body name="car" mocap="true">
      <geom name="body" type="box" pos="0 0 0.06" size="{params.length / 2} {params.width / 2} 0.04" material="body"/>
      <camera name="{FRONT_CAMERA}" pos="{nose} 0 {CAMERA_HEIGHT}" xyaxes="0 -1 0 {sin} 0 {cos}" fovy="{CAMERA_FOVY}"/>
    </body>
  </worldbody>
</mujoco>
"""
