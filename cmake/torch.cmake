# The PyTorch device (python/_torch/, DESIGN 16): a C++17 extension,
# lazytensor/torch/_bridge, built against Debian's PyTorch 1.13 when
# libtorch-dev and python3-torch are present (scripts/install-deps.sh
# installs them); otherwise skipped with a message.
option(LT_TORCH "Build the PyTorch device (needs libtorch-dev and python3-torch)" ON)
if(NOT LT_TORCH)
  message(STATUS "PyTorch device: skipped (LT_TORCH=OFF)")
  return()
endif()
find_path(LT_TORCH_INCLUDE torch/extension.h)
# torch/extension.h includes pybind11, which python3-torch only recommends.
find_path(LT_PYBIND11_INCLUDE pybind11/pybind11.h)
find_library(LT_TORCH_LIB torch)
find_library(LT_TORCH_CPU_LIB torch_cpu)
find_library(LT_C10_LIB c10)
find_library(LT_TORCH_PYTHON_LIB torch_python)
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import torch" RESULT_VARIABLE LT_TORCH_PY OUTPUT_QUIET ERROR_QUIET)
if(NOT (LT_TORCH_INCLUDE AND LT_PYBIND11_INCLUDE AND LT_TORCH_LIB AND LT_TORCH_CPU_LIB AND LT_C10_LIB AND LT_TORCH_PYTHON_LIB
        AND LT_TORCH_PY EQUAL 0))
  message(STATUS "PyTorch device: skipped (needs libtorch-dev, pybind11-dev and python3-torch: apt-get install libtorch-dev pybind11-dev python3-torch)")
  return()
endif()
enable_language(CXX)
message(STATUS "PyTorch device: ${LT_TORCH_LIB}")
file(GLOB LT_TORCH_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/_torch/*.cpp)
Python3_add_library(lt_torch MODULE WITH_SOABI ${LT_TORCH_SOURCES})
set_target_properties(lt_torch PROPERTIES OUTPUT_NAME _bridge LIBRARY_OUTPUT_DIRECTORY ${LT_PY_BUILD}/lazytensor/torch
                      CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
                      CXX_VISIBILITY_PRESET hidden INSTALL_RPATH "${CMAKE_INSTALL_FULL_LIBDIR}")
target_include_directories(lt_torch PRIVATE ${LT_TORCH_INCLUDE} ${LT_TORCH_INCLUDE}/torch/csrc/api/include)
# Debian's libtorch is built with the C++11 ABI; TORCH_EXTENSION_NAME names the pybind11 module.
target_compile_definitions(lt_torch PRIVATE _GLIBCXX_USE_CXX11_ABI=1 TORCH_EXTENSION_NAME=_bridge)
# torch's headers are not -Wextra/-Wshadow clean; ours are held to -Wall.
target_compile_options(lt_torch PRIVATE -Wall -Wno-unused-parameter $<$<BOOL:${LT_WERROR}>:-Werror>)
# Every translation unit includes ATen: compiled once as a precompiled header
# (one op family per file stays cheap to build on 2 cores).
target_precompile_headers(lt_torch PRIVATE <ATen/ATen.h> <torch/library.h>)
target_link_libraries(lt_torch PRIVATE lazytensor ${LT_TORCH_PYTHON_LIB} ${LT_TORCH_LIB} ${LT_TORCH_CPU_LIB} ${LT_C10_LIB})
add_dependencies(lt_python lt_torch)
