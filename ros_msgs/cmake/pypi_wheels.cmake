# Injected into each message package with -DCMAKE_PROJECT_INCLUDE=... by ros_msgs/build.sh (not needed in a regular
# ROS 2 install). The CMake exports of the PyPI ros-* wheels name include directories of the machine that built the
# wheels (/opt/python/cp311-cp311/include/python3.11 and its numpy), which CMake refuses at generate time. Once the
# package's CMakeLists.txt has run, drop the directories that do not exist from every imported target; the generated
# Python extensions get this interpreter's Python and NumPy headers from rosidl_generator_py itself.
function(_robo_rl_drop_missing_include_dirs)
  get_property(_targets DIRECTORY "${CMAKE_SOURCE_DIR}" PROPERTY IMPORTED_TARGETS)
  foreach(_target IN LISTS _targets)
    get_target_property(_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
    if(NOT _dirs)
      continue()
    endif()
    set(_kept "")
    foreach(_dir IN LISTS _dirs)
      if(_dir MATCHES "^\\$<" OR EXISTS "${_dir}")
        list(APPEND _kept "${_dir}")
      endif()
    endforeach()
    set_target_properties(${_target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_kept}")
  endforeach()
endfunction()

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _robo_rl_drop_missing_include_dirs)
