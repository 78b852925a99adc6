# Precompiled headers. asio, the generated protobuf headers and nlohmann-json are parsed again
# by nearly every source of the controller, node daemon, accounting daemon, REST daemon and
# operator: about a fifth of a typical controller source's compile time (ctld/nodes.cc: 11.8 s
# of CPU with, 15.0 s without). The set is compiled once and reused by every such target.
# Left out on purpose: the commands (src/cli), whose start-up is measured and must not gain a
# header's static initialisers; and the unit tests, where it saved under a sixth and GCC 12
# then reported false -Warray-bounds inside libstdc++ (the same happens with std::string
# temporaries pushed into vectors in daemon code: construct them in place).
option(SHOAL_PCH "Precompile asio, protobuf and json headers for the daemons" ON)

if(SHOAL_PCH)
  find_package(nlohmann_json 3 REQUIRED)
  add_library(shoal_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch_anchor.cc)
  target_include_directories(shoal_pch PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(shoal_pch PRIVATE shoal_proto nlohmann_json::nlohmann_json)
  target_precompile_headers(shoal_pch PRIVATE ${PROJECT_SOURCE_DIR}/src/common/pch.h)
endif()

# Gives target the daemons' precompiled headers.
function(shoal_use_pch target)
  if(SHOAL_PCH)
    target_precompile_headers(${target} REUSE_FROM shoal_pch)
  endif()
endfunction()
