#pragma once
// The session and handle registry as written to the state directory, so that a gateway
// restarted with the same --state-dir and --replica-name serves the same sessions again.
//
// Pure data, its text form, and the file's write and read. The file is read back from disk
// and never trusted: parsing is bounded (size, nesting), every field is checked, an entry that
// fails a check is skipped, and a torn or foreign file is ignored as a whole, with a problem
// to log. Tokens are never in it (only tenant names); session ids are, so the file is 0600 in
// a 0700 directory.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "session.hpp"

namespace sandgate::session {

// What a session's sandbox was when the registry was written.
enum class SavedSandbox {
  none,        // it had none (no call yet, or its sandbox ended): nothing to bring back
  live,        // live: its /work dies with the gateway, the next call says so
  hibernated,  // its /work waits in the state directory as an archive
};

struct SavedSession {
  std::string id;
  SessionKind kind = SessionKind::session;
  std::string tenant;
  // Wall-clock times (ms since the Unix epoch): a restart in between counts towards the
  // session's lifetime and idle timeout, as time does.
  std::int64_t created_unix_ms = 0;
  std::int64_t last_used_unix_ms = 0;
  double spend_usd = 0;  // all its sandboxes so far
  SavedSandbox sandbox = SavedSandbox::none;
  // The environment its sandboxes run in (issue #43); "" when no call decided it yet.
  std::string environment;

  bool operator==(const SavedSession&) const = default;
};

struct SavedRegistry {
  std::string replica;  // --replica-name of the gateway that wrote it ("" when none)
  std::vector<SavedSession> sessions;

  bool operator==(const SavedRegistry&) const = default;
};

constexpr const char* kSavedSessionsFile = "sessions.json";
// About 200 bytes a session: room for the largest registry (--max-sessions 50000) many times.
constexpr std::size_t kMaxSavedBytes = 64u << 20;

std::string serialize(const SavedRegistry& registry);

struct ParsedRegistry {
  std::optional<SavedRegistry> registry;  // nullopt: the whole file is ignored (`problem`)
  std::string problem;
  std::size_t skipped = 0;  // entries that failed a check (`problem` names the first)
};
// Never throws; anything but a well-formed registry of this format and version is refused.
ParsedRegistry parse_saved_registry(std::string_view text);

// Writes `text` as <dir>/sessions.json: a temporary file (0600), fsync, rename over the old
// one, fsync of the directory. A crash at any moment leaves the old file or the new one.
bool write_saved_registry(const std::string& dir, const std::string& text, std::string& error);

struct SavedFile {
  bool absent = false;              // no file: a first start, nothing to say
  std::optional<std::string> text;  // the bytes, when the file could be used
  std::string problem;              // why not (not a regular file of ours, too large, ...)
};
SavedFile read_saved_registry(const std::string& dir);

}  // namespace sandgate::session
