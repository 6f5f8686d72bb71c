#!/bin/sh
# Installs the real `ros2 launch` into the ROS venv, for running launch/*.launch.yaml as ROS does (usage:
# ros_msgs/ros_launch.sh VENV SRC; `make ros-launch LAUNCH_SRC=SRC` runs it for .venv-ros). SRC holds checkouts of
# ros2/launch (tag 3.7.1), ros2/launch_ros (0.28.0) and ros2/ros2cli (0.36.1) as SRC/launch, SRC/launch_ros and
# SRC/ros2cli; PyPI has no wheels of them, and nothing here fetches them. Their pure-Python packages go into VENV
# with pip (launch, launch_yaml, launch_xml, launch_ros, ros2launch, ros2cli, ros2pkg; their PyPI dependencies too),
# and robo_rl itself is installed as a ROS package by its CMakeLists.txt into VENV's prefix (share/robo_rl with the
# launch files, lib/robo_rl with the node executables, its ament index marker). composition_interfaces, which
# launch_ros imports and which has no wheel either, is built by ros_msgs/build.sh (`make ros-msgs`).
# Then, with VENV/bin first on PATH and VENV on AMENT_PREFIX_PATH: ros2 launch robo_rl FILE.launch.yaml ...
set -eu

venv=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

version() { # the <version> of a package.xml
	sed -n 's:.*<version>\(.*\)</version>.*:\1:p' "$1" | head -1
}

check() { # folder expected-version
	if [ ! -f "$src/$1/package.xml" ]; then
		echo "ros_launch: $src/$1 is missing (SRC must hold ros2/launch, ros2/launch_ros and ros2/ros2cli checkouts)" >&2
		exit 2
	fi
	found=$(version "$src/$1/package.xml")
	[ "$found" = "$2" ] || echo "ros_launch: warning: $1 is version $found; robo_rl was checked with $2" >&2
}

check launch/launch 3.7.1
check launch/launch_yaml 3.7.1
check launch/launch_xml 3.7.1
check launch_ros/launch_ros 0.28.0
check launch_ros/ros2launch 0.28.0
check ros2cli/ros2cli 0.36.1
check ros2cli/ros2pkg 0.36.1

"$venv/bin/python" -m pip install --quiet osrf-pycommon psutil catkin-pkg pyyaml packaging
"$venv/bin/python" -c "import lark" 2>/dev/null || "$venv/bin/python" -m pip install --quiet lark  # rosidl has lark-parser
for package in launch/launch launch/launch_yaml launch/launch_xml launch_ros/launch_ros launch_ros/ros2launch \
	ros2cli/ros2cli ros2cli/ros2pkg; do
	echo "ros_launch: installing $package into $venv"
	"$venv/bin/python" -m pip install --quiet --no-deps --no-build-isolation "$src/$package"
done

build="$venv/robo_rl-build"
rm -rf "$build"
echo "ros_launch: installing robo_rl as a ROS package into $venv"
cmake -S "$root" -B "$build" -DCMAKE_PREFIX_PATH="$venv" -DCMAKE_INSTALL_PREFIX="$venv" \
	-DPython3_EXECUTABLE="$venv/bin/python" -DBUILD_TESTING=OFF \
	-DCMAKE_PROJECT_INCLUDE="$here/cmake/pypi_wheels.cmake" >"$build.configure.log" 2>&1 ||
	{ tail -40 "$build.configure.log" >&2; exit 1; }
cmake --install "$build" >"$build.install.log" 2>&1 || { tail -40 "$build.install.log" >&2; exit 1; }
echo "ros_launch: done; run it as: PATH=$venv/bin:\$PATH AMENT_PREFIX_PATH=$venv ros2 launch robo_rl FILE.launch.yaml"
