# samplecheck_warnings(target): the warning set every first-party C++ target builds with.
function(samplecheck_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow>)
endfunction()
