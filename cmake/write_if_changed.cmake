# write_if_changed(PATH TEXT): writes TEXT to PATH unless it already holds
# it, so generated files keep their time stamps and nothing rebuilds.
function(write_if_changed path text)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if(old STREQUAL text)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${text}")
endfunction()
