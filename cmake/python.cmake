# The Python package. build/python/ is an importable tree:
#   PYTHONPATH=build/python /usr/bin/python3 -c 'import lazytensor'
# It holds the _C module and symbolic links to the package's .py files, so
# edits to python/lazytensor/ are live without a rebuild (a new file needs a
# re-run of cmake, which the glob triggers).
message(STATUS "Python package: ${Python3_EXECUTABLE} (${Python3_VERSION})")
set(LT_PY_BUILD ${CMAKE_BINARY_DIR}/python)

file(GLOB LT_PY_C_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/_C/*.c)
Python3_add_library(lt_python MODULE WITH_SOABI ${LT_PY_C_SOURCES})
set_target_properties(lt_python PROPERTIES OUTPUT_NAME _C LIBRARY_OUTPUT_DIRECTORY ${LT_PY_BUILD}/lazytensor
                      C_VISIBILITY_PRESET hidden INSTALL_RPATH "${CMAKE_INSTALL_FULL_LIBDIR}")
# Python's headers trip -Wpedantic (statement expressions); the rest of LT_WARN holds.
target_compile_options(lt_python PRIVATE -Wall -Wextra -Wshadow $<$<BOOL:${LT_WERROR}>:-Werror>)
target_link_libraries(lt_python PRIVATE lazytensor)

file(GLOB_RECURSE LT_PY_FILES CONFIGURE_DEPENDS RELATIVE ${CMAKE_SOURCE_DIR}/python/lazytensor
     ${CMAKE_SOURCE_DIR}/python/lazytensor/*.py)
foreach(f ${LT_PY_FILES})
  get_filename_component(dir ${LT_PY_BUILD}/lazytensor/${f} DIRECTORY)
  file(MAKE_DIRECTORY ${dir})
  file(CREATE_LINK ${CMAKE_SOURCE_DIR}/python/lazytensor/${f} ${LT_PY_BUILD}/lazytensor/${f} SYMBOLIC)
endforeach()

# The pytest suite is one CTest test. Under the sanitizers the interpreter
# itself is not instrumented: ASan's runtime is preloaded, and leak checking
# is off (CPython keeps its own allocations alive at exit).
set(LT_PY_TEST_ENV "PYTHONPATH=${LT_PY_BUILD}" "LT_CLI=$<TARGET_FILE:lazytensor_cli>"
    "LT_BUILD_DIR=${CMAKE_BINARY_DIR}" "PYTHONDONTWRITEBYTECODE=1")
if(LT_ASAN)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so OUTPUT_VARIABLE LT_LIBASAN
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  # libstdc++ too: the PyTorch device throws C++ exceptions, and ASan's
  # __cxa_throw interceptor finds the real one only if libstdc++ is loaded
  # before ASan initializes (the interpreter itself is C).
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libstdc++.so OUTPUT_VARIABLE LT_LIBSTDCXX
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  list(APPEND LT_PY_TEST_ENV "LD_PRELOAD=${LT_LIBASAN} ${LT_LIBSTDCXX}" "ASAN_OPTIONS=detect_leaks=0"
       "LT_SANITIZED=1")
endif()
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import numpy, pytest" RESULT_VARIABLE LT_PY_TEST_DEPS
                OUTPUT_QUIET ERROR_QUIET)
if(LT_PY_TEST_DEPS EQUAL 0)
  # The PyTorch device's tests (test_torch_*.py: whole torchvision models,
  # OpInfo's samples; test_xla.py: scripts on 1 and 2 ranks) are a test of
  # their own, with the time they need; they skip without torch.
  file(GLOB LT_PY_TORCH_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/tests/test_torch_*.py
       ${CMAKE_SOURCE_DIR}/python/tests/test_xla.py)
  # pytest makes a relative --ignore-glob absolute from the working directory
  # (CTest's is the build directory), so the pattern is given whole.
  add_test(NAME test_python COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider
           --ignore-glob=${CMAKE_SOURCE_DIR}/python/tests/test_torch_*.py
           --ignore=${CMAKE_SOURCE_DIR}/python/tests/test_xla.py ${CMAKE_SOURCE_DIR}/python/tests)
  set_tests_properties(test_python PROPERTIES ENVIRONMENT "${LT_PY_TEST_ENV}" TIMEOUT 600)
  add_test(NAME test_python_torch COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${LT_PY_TORCH_TESTS})
  set_tests_properties(test_python_torch PROPERTIES ENVIRONMENT "${LT_PY_TEST_ENV}" TIMEOUT 2400)
else()
  message(STATUS "Python tests: skipped (${Python3_EXECUTABLE} lacks numpy or pytest; apt-get install python3-numpy python3-pytest)")
endif()
add_dependencies(lt_python lazytensor_cli)
include(${CMAKE_SOURCE_DIR}/cmake/torch.cmake)
