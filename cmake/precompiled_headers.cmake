# Precompiled headers. A build here spends its time parsing the same third-party headers (Asio's
# coroutine machinery, nlohmann::json, Beast, Catch) in every file, generating code for them, and
# writing their debug info; the presets keep line tables only (-g1), and each target parses
# the headers its files use once, here. Measured on server/tools/execute_tool.cpp at -O2:
# 25.5 s as it was, 20.1 s precompiled, 18.5 s with -g1, 11.8 s with both. CI builds the
# project four times (dev, two sanitizers, fuzz). -DSANDGATE_PCH=OFF builds without (to check
# that every file still includes what it uses; CI does not, for time).
option(SANDGATE_PCH "Precompile the heavy third-party headers of each target" ON)

set(SANDGATE_PCH_STD <algorithm> <chrono> <cstdint> <filesystem> <functional> <map> <memory>
  <optional> <string> <string_view> <vector>)
set(SANDGATE_PCH_ASIO <boost/asio/as_tuple.hpp> <boost/asio/awaitable.hpp>
  <boost/asio/co_spawn.hpp> <boost/asio/experimental/awaitable_operators.hpp>
  <boost/asio/io_context.hpp> <boost/asio/steady_timer.hpp> <boost/asio/use_awaitable.hpp>)
set(SANDGATE_PCH_JSON <nlohmann/json.hpp>)
set(SANDGATE_PCH_CATCH <catch2/catch.hpp>)
set(SANDGATE_PCH_HTTP <boost/asio/ip/tcp.hpp> <boost/beast/core.hpp> <boost/beast/http.hpp>)

# sandgate_precompile(target HEADER_SET...): e.g. sandgate_precompile(x STD ASIO JSON); or
# sandgate_precompile(target LIKE other) to reuse other's.
function(sandgate_precompile target)
  if(NOT SANDGATE_PCH)
    return()
  endif()
  set(headers)
  foreach(set_name IN LISTS ARGN)
    list(APPEND headers ${SANDGATE_PCH_${set_name}})
  endforeach()
  if(ARGV1 STREQUAL "LIKE")
    # sandgate_precompile(x LIKE y): the same headers as y, and y's precompiled file rather than
    # one more (each costs ~20 s of a build; the server's layers share two).
    target_precompile_headers(${target} REUSE_FROM ${ARGV2})
  else()
    target_precompile_headers(${target} PRIVATE ${headers})
  endif()
  # GCC 12 loses the system-header mark of precompiled headers for its middle-end warnings
  # (CMake's wrapper says `#pragma GCC system_header`; it does not help): std::string's inline
  # code then reports the library's known false positives in our files ("forming offset 32 is
  # out of the bounds [0, 32]", "writing 17 bytes into a region of size 16", "reading 243 bytes
  # from a region of size 16" for a push_back of a literal). Those four stay off where headers
  # are precompiled; -DSANDGATE_PCH=OFF builds with them.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-array-bounds -Wno-stringop-overflow
                                             -Wno-stringop-overread -Wno-restrict)
  endif()
endfunction()
