# convfindCliDocs.cmake - run in script mode (cmake -DTOOL=... -DDIR=... -P this file) by
# the build: writes the man page of the tool and of each of its commands, and the bash
# completion script, into DIR, all printed by the built tool itself.
foreach(_v TOOL DIR)
  if(NOT ${_v})
    message(FATAL_ERROR "convfindCliDocs.cmake: ${_v} is not set")
  endif()
endforeach()
file(MAKE_DIRECTORY ${DIR})

function(_convfind_run out)
  execute_process(COMMAND ${TOOL} help ${ARGN} OUTPUT_FILE ${out} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "convfind help ${ARGN} failed (${rc})")
  endif()
endfunction()

execute_process(COMMAND ${TOOL} help --commands OUTPUT_VARIABLE _names RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "convfind help --commands failed (${_rc})")
endif()
string(REPLACE "\n" ";" _names "${_names}")
foreach(_name ${_names})
  if(_name)
    _convfind_run(${DIR}/convfind-${_name}.1 --man ${_name})
  endif()
endforeach()
_convfind_run(${DIR}/convfind.1 --man)
_convfind_run(${DIR}/convfind.bash --bash-completion)
