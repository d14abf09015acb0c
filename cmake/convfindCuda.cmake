# convfindCuda.cmake - the optional CUDA backend module (src/cuda/, docs/cuda.md):
# detection of the CUDA toolkit and cuDNN 9, and the module libconvfind_cuda.so.
#
# CONVFIND_CUDA=OFF builds no module; ON requires the toolkit, nvcc and cuDNN; AUTO
# (default) builds it when all three are found.  The core library, libconvfind.a and the
# convfind tool never link CUDA, cudart or cuDNN: the module does, and the core loads it
# at run time (src/algo/module.c).  Where the module is built but the machine has no
# GPU (or no driver, or the module cannot load), a CUDA context reports
# CONVFIND_ERR_UNAVAILABLE with the reason and the GPU tests skip, so CI without a GPU
# still compiles and links it.  cuDNN is looked up under CUDNN_ROOT (CMake or
# environment variable) first, so a build can use the cuDNN that another program
# (PyTorch's wheel) ships.
#
# Two entry points, because the library targets are created in between:
#   convfind_cuda_detect()  before the sources are listed: sets CONVFIND_HAVE_CUDA
#   convfind_cuda_attach()  after the library targets exist: the module target
#                           convfind_cuda and the kernels' object library
set(CONVFIND_CUDA AUTO CACHE STRING "CUDA backend module: ON, OFF or AUTO")
set_property(CACHE CONVFIND_CUDA PROPERTY STRINGS ON OFF AUTO)

macro(convfind_cuda_detect)
  set(CONVFIND_HAVE_CUDA OFF)
  string(TOUPPER "${CONVFIND_CUDA}" _cf_cuda_mode)
  if(NOT _cf_cuda_mode MATCHES "^(ON|OFF|AUTO)$")
    message(FATAL_ERROR "CONVFIND_CUDA=${CONVFIND_CUDA}: expected ON, OFF or AUTO")
  endif()
  if(NOT _cf_cuda_mode STREQUAL "OFF")
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND AND NOT CMAKE_CUDA_COMPILER AND CUDAToolkit_NVCC_EXECUTABLE)
      set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
    endif()
    include(CheckLanguage)
    check_language(CUDA)
    set(_cf_cudnn_hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT})
    if(CUDAToolkit_FOUND)
      list(APPEND _cf_cudnn_hints ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_INCLUDE_DIRS}/..)
    endif()
    find_path(CUDNN_INCLUDE_DIR cudnn_graph.h HINTS ${_cf_cudnn_hints} PATH_SUFFIXES include)
    find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 HINTS ${_cf_cudnn_hints}
                 PATH_SUFFIXES lib lib64)
    set(_cf_missing)
    foreach(_v CUDAToolkit_FOUND CMAKE_CUDA_COMPILER CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
      if(NOT ${_v})
        list(APPEND _cf_missing ${_v})
      endif()
    endforeach()
    if(NOT _cf_missing)
      set(CONVFIND_HAVE_CUDA ON)
    elseif(_cf_cuda_mode STREQUAL "ON")
      message(FATAL_ERROR "CONVFIND_CUDA=ON but not found: ${_cf_missing} "
                          "(set CUDAToolkit_ROOT or CUDNN_ROOT)")
    endif()
  endif()
  if(CONVFIND_HAVE_CUDA)
    if(NOT CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    message(STATUS "CUDA backend module: on (cuDNN ${CUDNN_LIBRARY}, headers "
                   "${CUDNN_INCLUDE_DIR}, arch ${CMAKE_CUDA_ARCHITECTURES})")
  else()
    message(STATUS "CUDA backend module: off (CONVFIND_CUDA=${CONVFIND_CUDA}${_cf_missing})")
  endif()
endmacro()

# The module: the backend's C files, the pure helpers it shares with the core
# (src/algo/algo.c), and its kernels (.cu), which nvcc compiles in an object library of
# their own because the C warning flags are not nvcc's; the GPU benchmarks link those
# kernels too (their test-data fill).  It exports one symbol, the entry
# (src/algo/backend.h; src/cuda/module.map keeps every other symbol local), and
# --no-undefined proves it needs nothing from the core but what the entry is given.
function(convfind_cuda_attach)
  if(NOT CONVFIND_HAVE_CUDA)
    return()
  endif()
  add_library(convfind_cuda_kernels OBJECT src/cuda/kernels.cu)
  set_target_properties(convfind_cuda_kernels PROPERTIES POSITION_INDEPENDENT_CODE ON
                        CUDA_VISIBILITY_PRESET hidden CUDA_STANDARD 17)
  # The directory's options (sanitizers, fuzzing) are gcc/clang flags nvcc rejects; the
  # kernels' host code stays uninstrumented, which sanitized builds allow.
  set_property(TARGET convfind_cuda_kernels PROPERTY COMPILE_OPTIONS "")
  target_include_directories(convfind_cuda_kernels PUBLIC ${PROJECT_SOURCE_DIR}/src
                             ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include)
  set(_werror)
  if(CONVFIND_WERROR)
    set(_werror -Werror=all-warnings -Xcompiler=-Werror)
  endif()
  target_compile_options(convfind_cuda_kernels PRIVATE -Xcompiler=-Wall,-Wextra ${_werror})

  add_library(convfind_cuda MODULE
    src/cuda/backend.c src/cuda/host.c src/cuda/device.c src/cuda/graph.c src/cuda/algos.c
    src/cuda/lister.c
    src/cuda/find.c src/algo/algo.c $<TARGET_OBJECTS:convfind_cuda_kernels>)
  set_target_properties(convfind_cuda PROPERTIES C_VISIBILITY_PRESET hidden
                        OUTPUT_NAME convfind_cuda)
  target_compile_options(convfind_cuda PRIVATE ${CONVFIND_WARNINGS})
  target_include_directories(convfind_cuda PRIVATE ${PROJECT_SOURCE_DIR}/src
                             ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include
                             ${CUDNN_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
  # nvcc's host code needs the C++ runtime.
  target_link_libraries(convfind_cuda PRIVATE ${CUDNN_LIBRARY} CUDA::cudart_static stdc++
                        Threads::Threads m)
  target_link_options(convfind_cuda PRIVATE
                      LINKER:--version-script=${PROJECT_SOURCE_DIR}/src/cuda/module.map)
  set_property(TARGET convfind_cuda APPEND PROPERTY LINK_DEPENDS
               ${PROJECT_SOURCE_DIR}/src/cuda/module.map)
  # Sanitizer runtimes are the program's to provide (clang does not link them into a
  # shared object), so only an uninstrumented module can prove it is self-contained.
  if(NOT CONVFIND_SANITIZE AND NOT CONVFIND_FUZZ)
    target_link_options(convfind_cuda PRIVATE LINKER:--no-undefined)
  endif()
endfunction()
