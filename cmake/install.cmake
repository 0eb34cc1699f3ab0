# `make install` (cmake --install build): the shared library with its soname,
# the header, lazytensor.pc, a CMake package (find_package(lazytensor) ->
# lazytensor::lazytensor), the `lazytensor` program and, when built, the
# Python package where Debian's python3 looks (/usr/local/lib/python3/dist-packages).
include(CMakePackageConfigHelpers)
install(TARGETS lazytensor EXPORT lazytensorTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/lazytensor.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS lazytensor_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The .pc file finds the prefix from its own place (${pcfiledir}), so any
# --prefix or DESTDIR gives a working file.
file(RELATIVE_PATH LT_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(${CMAKE_SOURCE_DIR}/cmake/lazytensor.pc.in ${CMAKE_BINARY_DIR}/lazytensor.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/lazytensor.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

set(LT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/lazytensor)
install(EXPORT lazytensorTargets NAMESPACE lazytensor:: DESTINATION ${LT_CMAKE_DIR})
file(WRITE ${CMAKE_BINARY_DIR}/lazytensorConfig.cmake
     "include(\"\${CMAKE_CURRENT_LIST_DIR}/lazytensorTargets.cmake\")\n")
write_basic_package_version_file(${CMAKE_BINARY_DIR}/lazytensorConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/lazytensorConfig.cmake ${CMAKE_BINARY_DIR}/lazytensorConfigVersion.cmake
        DESTINATION ${LT_CMAKE_DIR})

if(TARGET lt_python)
  set(LT_PYTHON_INSTALL_DIR lib/python3/dist-packages CACHE STRING
      "Where make install puts the Python package, relative to the prefix (Debian's python3 searches /usr/local/lib/python3/dist-packages)")
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/lazytensor DESTINATION ${LT_PYTHON_INSTALL_DIR}
          FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
  install(TARGETS lt_python LIBRARY DESTINATION ${LT_PYTHON_INSTALL_DIR}/lazytensor)
endif()
# An install into the configured prefix itself (no DESTDIR, no --prefix)
# refreshes the dynamic linker's cache for the new soname.
install(CODE "if(\"\$ENV{DESTDIR}\" STREQUAL \"\" AND \"\${CMAKE_INSTALL_PREFIX}\" STREQUAL \"${CMAKE_INSTALL_PREFIX}\")
  execute_process(COMMAND ldconfig RESULT_VARIABLE rc)
endif()")

# The install, checked: into a temporary prefix, then a program outside the
# tree built with `cc prog.c $(pkg-config --cflags --libs lazytensor)`.
add_test(NAME test_install COMMAND sh ${CMAKE_SOURCE_DIR}/tests/install/check.sh ${CMAKE_BINARY_DIR}
         ${CMAKE_C_COMPILER} ${CMAKE_SOURCE_DIR}/examples/tiny_mlp.c)
set(LT_INSTALL_TEST_ENV "LT_PYTHON=${Python3_EXECUTABLE}")
if(LT_ASAN)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so OUTPUT_VARIABLE LT_LIBASAN
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  list(APPEND LT_INSTALL_TEST_ENV "LD_PRELOAD=${LT_LIBASAN}" "ASAN_OPTIONS=detect_leaks=0")
endif()
set_tests_properties(test_install PROPERTIES ENVIRONMENT "${LT_INSTALL_TEST_ENV}" TIMEOUT 300)
