#!/bin/sh
# Builds the message packages in ros_msgs/ with CMake, ament_cmake and rosidl from the PyPI ros-* wheels, and installs
# them into the ROS venv's own prefix (usage: ros_msgs/build.sh VENV [PACKAGE...], all of them without PACKAGE;
# `make ros-msgs` runs it for .venv-ros).
# That prefix is where the ros-*-msgs wheels put their files: Python packages in lib/python3.X/site-packages, the
# typesupport libraries in lib/, which the wheels' .pth (ros_wheels_bootstrapper) puts on LD_LIBRARY_PATH, and
# share/<package> with the .msg, .idl and the type-description .json files.
set -eu

venv=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
jobs=${ROS_MSGS_JOBS:-2}
mkdir -p "$venv/msgs-build"
shift
packages=${*:-ackermann_msgs composition_interfaces crazyflie_interfaces px4_msgs}

for package in $packages; do
	build="$venv/msgs-build/$package"
	rm -rf "$build"
	echo "ros_msgs: building $package into $venv"
	cmake -S "$here/$package" -B "$build" \
		-DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_PREFIX_PATH="$venv" \
		-DCMAKE_INSTALL_PREFIX="$venv" \
		-DPython3_EXECUTABLE="$venv/bin/python" \
		-DBUILD_TESTING=OFF \
		-DCMAKE_PROJECT_INCLUDE="$here/cmake/pypi_wheels.cmake" >"$build.configure.log" 2>&1 ||
		{ tail -40 "$build.configure.log" >&2; exit 1; }
	cmake --build "$build" -j "$jobs" >"$build.build.log" 2>&1 || { tail -40 "$build.build.log" >&2; exit 1; }
	cmake --install "$build" >"$build.install.log" 2>&1 || { tail -40 "$build.install.log" >&2; exit 1; }
done
