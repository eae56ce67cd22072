# Warnings and sanitizers, applied to every lockstep target through lockstep_warnings.
add_library(lockstep_warnings INTERFACE)
add_library(lockstep::warnings ALIAS lockstep_warnings)
target_compile_options(lockstep_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wshadow -Wno-unused-parameter -Wno-missing-field-initializers>)

if(LOCKSTEP_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(LOCKSTEP_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT LOCKSTEP_SANITIZE STREQUAL "")
  message(FATAL_ERROR "LOCKSTEP_SANITIZE must be '', 'address' or 'thread', not '${LOCKSTEP_SANITIZE}'")
endif()
