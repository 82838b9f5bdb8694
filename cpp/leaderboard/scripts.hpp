// The server-side scripts of scripts/*.lua, embedded at build time (see CMakeLists.txt).
#pragma once

#include <string_view>

namespace rlb::leaderboard {

struct Script {
  std::string_view name;
  std::string_view body;  // _lib.lua followed by the script
  std::string_view sha1;  // hex, as EVALSHA wants it
};

namespace scripts {
extern const Script write;
extern const Script trim;
extern const Script window;
extern const Script clear;
}  // namespace scripts

}  // namespace rlb::leaderboard
