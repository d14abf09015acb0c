# convfindCuda.cmake - the optional CUDA backend (src/cuda/, docs/cuda.md): detection of
# the CUDA toolkit and cuDNN 9, and the sources, flags and libraries it adds.
#
# CONVFIND_CUDA=OFF builds a CPU-only library; ON requires the toolkit, nvcc and cuDNN;
# AUTO (default) enables the backend when all three are found.  Where the backend is
# built but the machine has no GPU, a CUDA context reports CONVFIND_ERR_UNSUPPORTED with
# the reason and the GPU tests skip, so CI without a GPU still compiles and links it.
# cuDNN is looked up under CUDNN_ROOT (CMake or environment variable) first, so a
# build can use the cuDNN that another program (PyTorch's wheel) ships.
#
# Two entry points, because the library targets are created in between:
#   convfind_cuda_detect()  before the sources are listed: sets CONVFIND_HAVE_CUDA
#   convfind_cuda_attach()  after the library targets exist: adds sources and libraries
set(CONVFIND_CUDA AUTO CACHE STRING "CUDA backend: ON, OFF or AUTO")
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
    # Consumers of the static library link cuDNN and the static CUDA runtime too:
    # convfindConfig.cmake finds CUDAToolkit again; convfind.pc names them.
    list(APPEND CONVFIND_DEPENDENCY_PACKAGES CUDAToolkit)
    get_filename_component(_cf_cudnn_dir "${CUDNN_LIBRARY}" DIRECTORY)
    set(CONVFIND_PC_LIBS_PRIVATE_CUDA "-L${_cf_cudnn_dir} -lcudnn -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt -lstdc++")
    if(NOT CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    message(STATUS "CUDA backend: on (cuDNN ${CUDNN_LIBRARY}, headers ${CUDNN_INCLUDE_DIR}, "
                   "arch ${CMAKE_CUDA_ARCHITECTURES})")
  else()
    message(STATUS "CUDA backend: off (CONVFIND_CUDA=${CONVFIND_CUDA}${_cf_missing})")
  endif()
endmacro()

# The backend's C files join convfind_objects; its kernels (.cu) are compiled by nvcc in
# an object library of their own, because the C warning flags are not nvcc's.
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
  target_include_directories(convfind_cuda_kernels PRIVATE ${PROJECT_SOURCE_DIR}/src
                             ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include)
  set(_werror)
  if(CONVFIND_WERROR)
    set(_werror -Werror=all-warnings -Xcompiler=-Werror)
  endif()
  target_compile_options(convfind_cuda_kernels PRIVATE -Xcompiler=-Wall,-Wextra ${_werror})
  target_sources(convfind_objects PRIVATE
    src/cuda/device.c src/cuda/graph.c src/cuda/algos.c src/cuda/find.c)
  target_include_directories(convfind_objects PRIVATE ${CUDNN_INCLUDE_DIR}
                             ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_definitions(convfind_objects PRIVATE CONVFIND_HAVE_CUDA=1)
  foreach(t convfind convfind_static convfind_internal)
    target_sources(${t} PRIVATE $<TARGET_OBJECTS:convfind_cuda_kernels>)
  endforeach()
  target_link_libraries(convfind PRIVATE ${CUDNN_LIBRARY} CUDA::cudart_static)
  # nvcc's host code needs the C++ runtime, which a static archive cannot carry.
  target_link_libraries(convfind_static PRIVATE ${CUDNN_LIBRARY} CUDA::cudart_static stdc++)
  target_link_libraries(convfind_internal PUBLIC ${CUDNN_LIBRARY} CUDA::cudart_static)
  target_include_directories(convfind_internal PUBLIC ${CUDNN_INCLUDE_DIR}
                             ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_definitions(convfind_internal PUBLIC CONVFIND_HAVE_CUDA=1)
endfunction()
