# robo_rl: `make demo` trains the main job end to end; `make test` runs the test suite.
# Both create .venv on a fresh machine. torch is installed first, pinned, so pip reuses the local CPU wheel
# instead of pulling the CUDA build.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH := torch==2.13.0
# L2F, the Crazyflie simulator of "Learning to Fly in Seconds": the outside judge of the hover policies
# (robo_rl.sim.quadrotor.l2f_gate). An sdist that g++ builds in 2-4 min; pip caches the wheel for later venvs.
# Only .venv gets it (not .venv-ros or .venv-mjlab). Pinned: the gate reads its parameter JSON and vector interface.
L2F_VERSION := 2.0.18
L2F := l2f==$(L2F_VERSION)
# RotorPy, a second outside quadrotor simulator (motors first order in rotor speed, rotor drag, its own IMU): the
# sysid tests fit its Crazyflie (tests/robo_rl/sysid/test_uncertainty.py). Pure Python; pinned like L2F.
ROTORPY_VERSION := 3.0.0
ROTORPY := rotorpy==$(ROTORPY_VERSION)
STAMP := $(VENV)/.installed

.PHONY: demo test bench claims install system-deps ros-venv mjlab-venv safety-venv lint docs clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel

# MuJoCo renders offscreen through EGL with Mesa's software driver (`robo-rl play`, rendering tests);
# firmware_export cross-compiles for the Cortex-M4F (arm-none-eabi-gcc with newlib) and runs the test
# firmware in QEMU (`robo-rl export --target cortex-m4 --verify`, tests/firmware_export).
# l2f (below) compiles its C++ simulator from source: g++ and the Python headers.
# The secure mode's keystore is checked with OpenSSL (openssl) and, in tests/real/security, under Cyclone DDS's own
# DDS-Security plugins (libddsc0debian, with cyclonedds-dev's headers and cyclonedds-tools' idlc for a C peer).
SYSTEM_PACKAGES := libegl1 libegl-mesa0 libgl1-mesa-dri libgles2 \
	gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm \
	g++ python3-dev \
	openssl libddsc0debian cyclonedds-dev cyclonedds-tools

$(STAMP): $(PY) pyproject.toml
	@$(MAKE) --no-print-directory system-deps
	$(PIP) install $(TORCH)
	$(PIP) install -e ".[train,sim,export,dev]"
	touch $(STAMP) $(CORE_STAMP)

# The core install: the package with its training extra (torch), what `make docs` needs. No system packages, MuJoCo,
# PyBullet or ONNX: the generators skip (and keep the files of) a task folder whose simulator needs a missing backend.
# The full install above includes it.
CORE_STAMP := $(VENV)/.installed-core
$(CORE_STAMP): $(PY) pyproject.toml
	$(PIP) install $(TORCH)
	$(PIP) install -e ".[train]"
	touch $(CORE_STAMP)

# A stamp of its own, so that an existing .venv gets l2f at its next make, and a machine that cannot build it keeps
# the rest of .venv (the gate's tests, `robo-rl eval --sim l2f` and the demo's L2F step then say why they skip).
L2F_STAMP := $(VENV)/.installed-l2f-$(L2F_VERSION)
ROTORPY_STAMP := $(VENV)/.installed-rotorpy-$(ROTORPY_VERSION)
$(ROTORPY_STAMP): $(STAMP)
	$(PIP) install $(ROTORPY) && touch $(ROTORPY_STAMP) || \
		echo "warning: $(ROTORPY) did not install; the RotorPy sysid test skips" >&2

$(L2F_STAMP): $(STAMP)
	$(PIP) install $(L2F) && touch $(L2F_STAMP) || \
		echo "warning: $(L2F) did not build (needs g++ and the Python headers); the L2F gate skips" >&2

# The simulators' numba kernels, compiled into their disk cache whenever their sources change (about 25 s), so that
# no run or test pays for it (a test with a deadline would otherwise).
NUMBA_SOURCES := robo_rl/sim/numba_support.py $(wildcard robo_rl/sim/*/equations.py robo_rl/sim/*/fused.py)
NUMBA_STAMP := $(VENV)/.numba-cache
$(NUMBA_STAMP): $(STAMP) $(NUMBA_SOURCES)
	@echo "compiling the simulators' numba steps into their disk cache"
	$(PY) -c "from robo_rl.sim.numba_warm import warm_caches; warm_caches()"
	touch $(NUMBA_STAMP)

install: $(STAMP) $(NUMBA_STAMP) $(L2F_STAMP) $(ROTORPY_STAMP)

# .venv-ros: real rclpy from PyPI's ros-* wheels (Kilted; ROS_DISTRO=jazzy for the ros-jazzy-* wheels), the
# messages the nodes use, Fast DDS as the RMW, and the project with the deploy extra (onnxruntime, rosbags), the
# training extra (torch for sim_bridge; `robo-rl train --teleop ros` runs here) and the export extra (onnx: the
# train_*.launch.yaml files export policy.onnx when training ends, under ros2 launch too). A venv of its own because
# the wheels' .pth file re-executes Python to set LD_LIBRARY_PATH.
# cyclonedds is the independent DDS peer of the wire test. tests/real/ros use it and skip, saying why, without it.
VENV_ROS := .venv-ros
PY_ROS := $(VENV_ROS)/bin/python
ROS_DISTRO ?= kilted
ROS_PREFIX := $(if $(filter kilted,$(ROS_DISTRO)),ros-,ros-$(ROS_DISTRO)-)
ROS_WHEELS := rclpy rmw-fastrtps-cpp std-msgs geometry-msgs sensor-msgs nav-msgs trajectory-msgs \
	lifecycle-msgs diagnostic-msgs
# mujoco: sim_bridge and `robo-rl train --robot arm|arm_peg` make or resolve MuJoCo tasks (robo_rl.sim.mujoco).
# The stamp's suffix names what the recipe installs beyond pyproject.toml: a new one rebuilds older venvs.
ROS_STAMP := $(VENV_ROS)/.installed-$(ROS_DISTRO)-mujoco

$(ROS_STAMP): pyproject.toml
	rm -rf $(VENV_ROS)
	$(PYTHON) -m venv $(VENV_ROS)
	$(PY_ROS) -m pip install --upgrade pip setuptools wheel
	$(PY_ROS) -m pip install $(TORCH)
	$(PY_ROS) -m pip install $(addprefix $(ROS_PREFIX),$(ROS_WHEELS)) "cyclonedds>=0.10"
	$(PY_ROS) -m pip install -e ".[ros,train,fast,export]" "mujoco>=3.0"
	touch $(ROS_STAMP)

# px4_msgs, ackermann_msgs and crazyflie_interfaces, which PyPI has no wheels of (the messages of the PX4, rc_car and
# crazyswarm2 profiles): built from ros_msgs/ (definitions that match upstream field for field, ros_msgs/README.md)
# with CMake, ament_cmake and rosidl from the ros-* wheels, into .venv-ros's own prefix. A stamp of its own, so that
# a failed message build leaves the rest of .venv-ros usable (tests/real/ros/test_msgs.py then skips, saying so).
ROS_BUILD_WHEELS := ament-cmake ament-package ament-cmake-include-directories rosidl-default-generators \
	rosidl-core-generators $(if $(filter kilted,$(ROS_DISTRO)),ament-cmake-ros-core,ament-cmake-ros)
ROS_SYSTEM_PACKAGES := cmake g++
ROS_MSGS_SOURCES := $(wildcard ros_msgs/build.sh ros_msgs/cmake/*.cmake ros_msgs/*/package.xml \
	ros_msgs/*/CMakeLists.txt ros_msgs/*/msg/*.msg ros_msgs/*/srv/*.srv)
ROS_MSGS_STAMP := $(VENV_ROS)/.msgs-$(ROS_DISTRO)

.PHONY: ros-msgs

$(ROS_MSGS_STAMP): $(ROS_STAMP) $(ROS_MSGS_SOURCES)
	@$(MAKE) --no-print-directory system-deps SYSTEM_PACKAGES="$(ROS_SYSTEM_PACKAGES)"
	$(PY_ROS) -m pip install $(addprefix $(ROS_PREFIX),$(ROS_BUILD_WHEELS)) catkin-pkg
	sh ros_msgs/build.sh $(VENV_ROS)
	touch $(ROS_MSGS_STAMP)

ros-msgs: $(ROS_MSGS_STAMP)

ros-venv: $(ROS_STAMP) $(ROS_MSGS_STAMP)

# The real `ros2 launch` in .venv-ros (docs/ROBOT.md, "The real ros2 launch without a ROS installation"): PyPI has
# no wheels of ros2/launch, ros2/launch_ros or ros2cli, and CI cannot fetch them, so LAUNCH_SRC names a folder with
# their checkouts (launch at tag 3.7.1, launch_ros at 0.28.0, ros2cli at 0.36.1, as LAUNCH_SRC/launch,
# LAUNCH_SRC/launch_ros, LAUNCH_SRC/ros2cli). ros_msgs/ros_launch.sh pip-installs their Python packages into
# .venv-ros and installs robo_rl as a ROS package (CMakeLists.txt) into .venv-ros's prefix; composition_interfaces,
# which launch_ros imports, comes from `make ros-msgs`. Then: PATH=.venv-ros/bin:$$PATH AMENT_PREFIX_PATH=.venv-ros
# ros2 launch robo_rl FILE. tests/real/ros/test_launch_stop.py runs its ros2 cases where this was done.
LAUNCH_SRC ?=
.PHONY: ros-launch
ros-launch: $(ROS_STAMP) $(ROS_MSGS_STAMP)
	@if [ -z "$(LAUNCH_SRC)" ]; then \
		echo "make ros-launch: give LAUNCH_SRC=DIR, a folder holding checkouts of ros2/launch (tag 3.7.1)," >&2; \
		echo "  ros2/launch_ros (0.28.0) and ros2/ros2cli (0.36.1) as DIR/launch, DIR/launch_ros, DIR/ros2cli," >&2; \
		echo "  e.g. git clone -b 3.7.1 https://github.com/ros2/launch DIR/launch (nothing is fetched here)" >&2; \
		exit 2; \
	fi
	@$(MAKE) --no-print-directory system-deps SYSTEM_PACKAGES="$(ROS_SYSTEM_PACKAGES)"
	sh ros_msgs/ros_launch.sh $(VENV_ROS) $(LAUNCH_SRC)

# .venv-mjlab: mjlab (Isaac Lab's manager-based API on MuJoCo Warp) for `robo_rl.sim.from_mjlab` and tests/sim/mjlab.
# A venv of its own because mjlab pins mujoco~=3.11 where .venv has mujoco 4. The CPU torch goes in first and a
# constraints file keeps it (an unpinned torch would pull the CUDA build); robo_rl then comes in with only the extras
# that leave mujoco alone (train, export; [sim] would ask for the main venv's simulators), plus pytest.
VENV_MJLAB := .venv-mjlab
PY_MJLAB := $(VENV_MJLAB)/bin/python
MJLAB := mjlab==1.6.0
MJLAB_STAMP := $(VENV_MJLAB)/.installed

$(MJLAB_STAMP): pyproject.toml
	rm -rf $(VENV_MJLAB)
	$(PYTHON) -m venv $(VENV_MJLAB)
	$(PY_MJLAB) -m pip install --upgrade pip setuptools wheel
	$(PY_MJLAB) -m pip install $(TORCH)
	$(PY_MJLAB) -m pip freeze | grep -i "^torch==" > $(VENV_MJLAB)/constraints.txt
	$(PY_MJLAB) -m pip install -c $(VENV_MJLAB)/constraints.txt $(MJLAB)
	$(PY_MJLAB) -m pip freeze | grep -i "^\(torch\|mujoco\|mujoco-warp\|warp-lang\)==" > $(VENV_MJLAB)/constraints.txt
	$(PY_MJLAB) -m pip install -c $(VENV_MJLAB)/constraints.txt -e ".[train,export]" "pytest>=8.0"
	$(PY_MJLAB) -c "import mjlab, mujoco, torch; print('mjlab venv: mujoco', mujoco.__version__, 'torch', torch.__version__)"
	touch $(MJLAB_STAMP)

mjlab-venv: $(MJLAB_STAMP)

# .venv-safety: Safety-Gymnasium (the safe-RL benchmark's MuJoCo tasks, `robo_rl.sim.safety_gym`) and OmniSafe (its
# authors' safe-RL algorithms, the outside reference for --algo ppo_lag), for tests/sim/safety_gym. A venv of its own:
# safety-gymnasium 1.0.0 pins gymnasium 0.28.1 and mujoco 2.3.3, where .venv has gymnasium 1.x and mujoco 4.
# It also pins pygame 2.1.0, which nothing imports (only its keyboard viewer would) and whose sdist does not build
# on Python 3.11 without SDL's headers, and gymnasium-robotics 1.2.2 (imported for its multi-agent tasks), which pins
# numpy<1.24 where robo_rl needs 1.24; so safety-gymnasium, gymnasium-robotics and omnisafe go in with --no-deps and
# their other requirements are listed here (omnisafe's: those of its package metadata, safety-gymnasium aside).
# numpy stays below 2: gymnasium 0.28 uses np.bool8, and mujoco 2.3.3 was built against numpy 1.
# On Python 3.11, dataclasses refuse safety-gymnasium's np.array field defaults (`color: np.array = COLOR['goal']`:
# "mutable default"); the sed makes each a default_factory returning that same array, which is what Python 3.10
# shared between instances, so the tasks are unchanged. The CPU torch goes in first and a constraints file keeps it,
# then gymnasium, mujoco and numpy as the simulator's requirements chose them.
# OmniSafe has a stamp of its own: where it cannot be installed, the rest of .venv-safety stays (its tests skip).
VENV_SAFETY := .venv-safety
PY_SAFETY := $(VENV_SAFETY)/bin/python
SAFETY_GYMNASIUM := safety-gymnasium==1.0.0
SAFETY_NO_DEPS := $(SAFETY_GYMNASIUM) gymnasium-robotics==1.2.2
SAFETY_REQUIREMENTS := gymnasium==0.28.1 mujoco==2.3.3 "numpy<2" "xmltodict>=0.13.0" "pyyaml>=6.0" "imageio>=2.27.0" \
	"PettingZoo>=1.23.0" "Jinja2>=3.0.3"
OMNISAFE := omnisafe==0.5.0
OMNISAFE_REQUIREMENTS := "numpy>=1.20.0" "tensorboard>=2.8.0" "wandb>=0.13.0" "pyyaml>=6.0" "moviepy>=1.0.0" \
	"typing-extensions>=4.0.0" "typer>=0.7.0" "seaborn>=0.12.2" pandas==2.0.3 "matplotlib>=3.7.1" "gdown>=4.6.0"
SAFETY_STAMP := $(VENV_SAFETY)/.installed
OMNISAFE_STAMP := $(VENV_SAFETY)/.installed-omnisafe

$(SAFETY_STAMP): pyproject.toml
	rm -rf $(VENV_SAFETY)
	$(PYTHON) -m venv $(VENV_SAFETY)
	$(PY_SAFETY) -m pip install --upgrade pip setuptools wheel
	$(PY_SAFETY) -m pip install $(TORCH)
	$(PY_SAFETY) -m pip freeze | grep -i "^torch==" > $(VENV_SAFETY)/constraints.txt
	$(PY_SAFETY) -m pip install --no-deps $(SAFETY_NO_DEPS)
	$(PY_SAFETY) -m pip install -c $(VENV_SAFETY)/constraints.txt $(SAFETY_REQUIREMENTS) -e ".[train,export]" \
		"pytest>=8.0"
	grep -rlE "^    color: np\.array = COLOR\['\w+'\]$$" $$($(PY_SAFETY) -c \
		"import sysconfig; print(sysconfig.get_paths()['purelib'])")/safety_gymnasium | xargs -r sed -i -E \
		"s/^(    color: np\.array = )(COLOR\['\w+'\])$$/\1__import__('dataclasses').field(default_factory=lambda: \2)/"
	$(PY_SAFETY) -m pip freeze | grep -i "^\(torch\|gymnasium\|mujoco\|numpy\)==" > $(VENV_SAFETY)/constraints.txt
	$(PY_SAFETY) -c "import safety_gymnasium, mujoco, torch; safety_gymnasium.make('SafetyPointGoal1-v0').reset(seed=0); \
		print('safety venv: safety-gymnasium', safety_gymnasium.__version__, 'mujoco', mujoco.__version__)"
	touch $(SAFETY_STAMP)

$(OMNISAFE_STAMP): $(SAFETY_STAMP)
	$(PY_SAFETY) -m pip install --no-deps $(OMNISAFE) && \
		$(PY_SAFETY) -m pip install -c $(VENV_SAFETY)/constraints.txt $(OMNISAFE_REQUIREMENTS) && \
		$(PY_SAFETY) -c "import omnisafe; print('safety venv: omnisafe', omnisafe.__version__)" && \
		touch $(OMNISAFE_STAMP) || echo "warning: $(OMNISAFE) did not install; its tests skip" >&2

safety-venv: $(SAFETY_STAMP) $(OMNISAFE_STAMP)

# Installs SYSTEM_PACKAGES with apt-get where they are missing (needs root); otherwise says what to install.
system-deps:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing system packages: $$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
		else \
			echo "warning: missing system packages (MuJoCo rendering, firmware builds and QEMU need them): $$missing" >&2; \
		fi; \
	fi

demo: $(STAMP) $(NUMBA_STAMP) $(L2F_STAMP)
	$(VENV)/bin/robo-rl demo

# pytest exits 5 when it collects nothing: that is a failure here, never a silent pass.
# TEST_WORKERS pytest-xdist processes (one thread each, tests/conftest.py), work-stealing so that the few long
# training tests do not end up queued behind each other; the 20 slowest tests are listed at the end.
# Lint (ruff), format check and type check (mypy on the whole package, no module exempted) come first,
# then the tests.
TEST_WORKERS ?= 2
LINTED := robo_rl tests bench docs/package_map.py docs/readme_lists.py docs/algorithm_sections.py
test: $(STAMP) $(NUMBA_STAMP) $(L2F_STAMP) $(ROTORPY_STAMP)
	@$(MAKE) --no-print-directory ros-venv || echo "make test: .venv-ros could not be built; the ROS tests skip" >&2
	@$(MAKE) --no-print-directory mjlab-venv || echo "make test: .venv-mjlab could not be built; the mjlab tests skip" >&2
	@$(MAKE) --no-print-directory safety-venv || \
		echo "make test: .venv-safety could not be built; the Safety-Gymnasium tests skip" >&2
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist worksteal --durations=20; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: no tests were collected" >&2; exit 1; fi; exit $$rc

bench: $(STAMP) $(NUMBA_STAMP) $(ROS_STAMP)
	$(PY) bench/pendulum_steps.py
	$(PY) bench/pendulum_vs_sb3.py
	$(PY) bench/algos_vs_sb3.py
	$(PY) bench/quadrotor_steps.py
	$(PY) bench/hover_gate.py
	$(PY) bench/contention.py
	$(PY) bench/kill_resume.py
	$(PY) bench/replay_save.py
	$(PY) bench/rc_car.py
	$(PY) bench/mujoco_steps.py --engines
	$(PY) bench/pybullet_steps.py
	$(PY) bench/ros_latency.py --load 0 1

# Every figure README.md quotes, re-measured at HEAD beside the quoted text (bench/claims.py): the short versions
# take minutes; `make claims CLAIMS_ARGS=--long` runs the full benchmarks. Run it before closing an issue that
# touches training, simulators or export.
CLAIMS_ARGS ?=
claims: $(STAMP) $(NUMBA_STAMP)
	cd bench && ../$(PY) claims.py $(CLAIMS_ARGS)

# The generated files: the algorithms' names and config sections (robo_rl/algorithms/registered.py, a block of
# robo_rl/experiment.py), the presets' YAML (robo_rl/configs), README's task table, preset list and --algo list, the
# package map in docs/ARCHITECTURE.md. `make test` checks each is current; run this after adding a task, a preset,
# an algorithm or an import. With the core install (tests/test_new_task_guide.py and
# tests/test_new_algorithm_guide.py run these lines with MuJoCo, PyBullet and ONNX hidden).
docs: $(CORE_STAMP)
	$(PY) docs/algorithm_sections.py
	$(PY) -m robo_rl.api.configs --write
	$(PY) docs/readme_lists.py
	$(PY) docs/package_map.py

lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINTED)

clean:
	rm -rf $(VENV) $(VENV_ROS) $(VENV_MJLAB) $(VENV_SAFETY) runs build *.egg-info
