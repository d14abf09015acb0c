# convfindSanitizerEnv.cmake - the environment a test needs when its process was not
# built with the sanitizers but loads a sanitized libconvfind.so (python via ctypes).
# ASan and TSan refuse to start unless their runtime is the first library loaded, so the
# runtime is preloaded; leak checking is off because the interpreter's own allocations,
# which live until exit, would be reported as leaks.  libstdc++ is preloaded after it:
# ASan's interceptor of __cxa_throw finds the real one when the runtime starts, and in a
# process without C++ at that point (python) the first C++ exception thrown later (ONNX
# Runtime's, in the Python package's tests) stopped the process with a failed CHECK.
#
# Sets CONVFIND_PRELOAD_TEST_ENV: a list of NAME=VALUE for a test's ENVIRONMENT property,
# empty when no sanitizer needs a preload (UBSan alone does not).
set(CONVFIND_PRELOAD_TEST_ENV "")
if("address" IN_LIST CONVFIND_SANITIZE)
  set(_rt asan)
  set(_options ASAN_OPTIONS=detect_leaks=0)
elseif("thread" IN_LIST CONVFIND_SANITIZE)
  set(_rt tsan)
  set(_options TSAN_OPTIONS=halt_on_error=1)
else()
  set(_rt "")
endif()
if(_rt)
  if(CMAKE_C_COMPILER_ID MATCHES "Clang")
    set(_rt_file libclang_rt.${_rt}-${CMAKE_SYSTEM_PROCESSOR}.so)
  else()
    set(_rt_file lib${_rt}.so)
  endif()
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=${_rt_file}
                  OUTPUT_VARIABLE _rt_path OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${_rt_path}" OR NOT EXISTS "${_rt_path}")
    message(FATAL_ERROR "CONVFIND_SANITIZE=${CONVFIND_SANITIZE}: ${CMAKE_C_COMPILER} "
                        "does not know where ${_rt_file} is (got '${_rt_path}')")
  endif()
  set(_preload ${_rt_path})
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libstdc++.so.6
                  OUTPUT_VARIABLE _cxx_path OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(IS_ABSOLUTE "${_cxx_path}" AND EXISTS "${_cxx_path}")
    string(APPEND _preload ":${_cxx_path}")
  endif()
  set(CONVFIND_PRELOAD_TEST_ENV LD_PRELOAD=${_preload} ${_options})
endif()
