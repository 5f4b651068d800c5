# Compiler flags shared by every target of the project (not exported to consumers).
set(KF_WARNING_FLAGS -Wall -Wextra -Wpedantic -Wshadow -Wconversion)

if(KF_NATIVE)
  add_compile_options(-march=native)
endif()
if(KF_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

function(kf_target_warnings target)
  target_compile_options(${target} PRIVATE ${KF_WARNING_FLAGS})
  if(KF_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

include(kf_ccache)
