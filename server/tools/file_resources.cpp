#include "file_resources.hpp"

#include <algorithm>

#include "common/base64.hpp"
#include "common/percent_encode.hpp"
#include "common/utf8.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
using nlohmann::json;

namespace {

// A read that failed for a reason of the gateway's or the host's (JSON-RPC -32603).
json internal_error(std::string message) {
  return json{{"error", {{"code", -32603}, {"message", std::move(message)}}}};
}

json not_found() {
  return {{"error", {{"code", kResourceNotFound}, {"message", "Resource not found"}}}};
}

bool ends_with(const std::string& s, const char* suffix) {
  std::string_view tail(suffix);
  if (s.size() < tail.size()) return false;
  for (std::size_t i = 0; i < tail.size(); ++i) {
    char c = s[s.size() - tail.size() + i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != tail[i]) return false;
  }
  return true;
}

}  // namespace

std::string file_uri(const std::string& key, const std::string& path) {
  return "sandgate://sandbox/" + key + "/work/" + percent_encode(path, "/");
}

std::string file_uri_key(std::string_view uri) {
  constexpr std::string_view prefix = "sandgate://sandbox/";
  if (uri.substr(0, prefix.size()) != prefix) return {};
  uri.remove_prefix(prefix.size());
  auto slash = uri.find('/');
  if (slash == std::string_view::npos) return {};
  return std::string(uri.substr(0, slash));
}

std::string mime_for_name(const std::string& path) {
  static const std::pair<const char*, const char*> kTypes[] = {
      {".txt", "text/plain"},
      {".log", "text/plain"},
      {".csv", "text/csv"},
      {".tsv", "text/tab-separated-values"},
      {".md", "text/markdown"},
      {".html", "text/html"},
      {".htm", "text/html"},
      {".css", "text/css"},
      {".py", "text/x-python"},
      {".js", "text/javascript"},
      {".sh", "text/x-shellscript"},
      {".json", "application/json"},
      {".xml", "application/xml"},
      {".yaml", "application/yaml"},
      {".yml", "application/yaml"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},
      {".webp", "image/webp"},
      {".pdf", "application/pdf"},
      {".zip", "application/zip"},
      {".gz", "application/gzip"},
      {".tar", "application/x-tar"},
      {".parquet", "application/vnd.apache.parquet"},
      {".npy", "application/octet-stream"}};
  for (const auto& [extension, type] : kTypes)
    if (ends_with(path, extension)) return type;
  return "";
}

std::string FileResources::mint(const std::string& tenant,
                                const std::shared_ptr<session::Session>& session,
                                const std::shared_ptr<sandbox::Sandbox>& sandbox,
                                const std::string& path) {
  std::lock_guard lock(mutex_);
  // Keys of sandboxes that are gone are dropped here (the pointer may be reused).
  for (auto it = keys_.begin(); it != keys_.end();)
    it = it->second.sandbox.expired() ? keys_.erase(it) : std::next(it);
  auto& key = keys_[sandbox.get()];
  if (key.key.empty()) key = {sandbox, session::new_session_id(replica_)};
  std::string uri = file_uri(key.key, path);
  if (!entries_.emplace(uri, Entry{tenant, session, sandbox, path}).second) return uri;
  by_tenant_[tenant].push_back(uri);
  if (by_tenant_[tenant].size() > max_per_tenant_) evict_oldest_locked(tenant);
  if (entries_.size() > max_entries_ && prune_locked() == 0) {
    auto most = std::max_element(by_tenant_.begin(), by_tenant_.end(), [](auto& a, auto& b) {
      return a.second.size() < b.second.size();
    });
    evict_oldest_locked(most->first);
  }
  return uri;
}

void FileResources::evict_oldest_locked(const std::string& tenant) {
  auto it = by_tenant_.find(tenant);
  if (it == by_tenant_.end() || it->second.empty()) return;
  entries_.erase(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) by_tenant_.erase(it);
}

std::size_t FileResources::prune_locked() {
  std::size_t pruned = 0;
  for (auto t = by_tenant_.begin(); t != by_tenant_.end();) {
    auto& uris = t->second;
    for (auto u = uris.begin(); u != uris.end();) {
      auto e = entries_.find(*u);
      auto live = e == entries_.end() ? nullptr : e->second.sandbox.lock();
      if (live && !live->ended()) {
        ++u;
        continue;
      }
      if (e != entries_.end()) entries_.erase(e);
      u = uris.erase(u);
      ++pruned;
    }
    t = uris.empty() ? by_tenant_.erase(t) : std::next(t);
  }
  return pruned;
}

boost::asio::awaitable<json> FileResources::read(std::string tenant, json params) {
  if (!params.is_object() || !params.contains("uri") || !params["uri"].is_string())
    co_return json{{"error", {{"code", -32602}, {"message", "resources/read needs params.uri"}}}};
  std::string uri = params["uri"].get<std::string>();
  Entry entry;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(uri);
    if (it == entries_.end() || it->second.tenant != tenant) co_return not_found();
    entry = it->second;
  }
  auto session = entry.session.lock();
  auto sandbox = entry.sandbox.lock();
  if (!session || !sandbox) co_return not_found();
  sandbox::FileReadRequest what;
  what.paths = {entry.path};
  what.max_bytes_each = read_max_bytes_;
  what.max_bytes_total = read_max_bytes_;
  // A large file held several times over: the gateway's reads together are bounded (reads_),
  // and a read takes its share only once its session's turn has come.
  std::optional<sandbox::TransferResult> read;
  std::string refused;
  try {
    read = co_await session->read_files(sandbox, std::move(what), &shared_reads_);
  } catch (const std::exception& e) {
    // The host refused a resource (a memfd, a pipe): an error, and the gateway goes on.
    refused = e.what();
  }
  if (!refused.empty())
    co_return internal_error("The file could not be read: the host refused a resource");
  co_return contents_of(read, uri, entry.path);
}

json FileResources::contents_of(std::optional<sandbox::TransferResult>& read,
                                const std::string& uri, const std::string& path) const {
  if (!read || (read->done && read->files.size() == 1 &&
                read->files[0].status == sandbox::FileStatus::not_found))
    return not_found();
  if (!read->done || read->files.size() != 1)
    return internal_error("The file could not be read: " +
                          (read->failure.empty() ? "failed" : read->failure));
  auto& file = read->files[0];
  if (file.status == sandbox::FileStatus::too_large)
    return internal_error("The file is " + std::to_string(file.size) +
                          " bytes now, more than the " + std::to_string(read_max_bytes_) +
                          " bytes a resource read returns");
  if (file.status != sandbox::FileStatus::ok)
    return internal_error(std::string("The file cannot be read: ") +
                          sandbox::file_status_text(file.status));
  // Text when it is text (valid UTF-8 without NUL), else base64.
  std::string mime = mime_for_name(path);
  json content = {{"uri", uri}};
  if (is_valid_utf8(file.content) && file.content.find('\0') == std::string::npos) {
    content["mimeType"] = mime.empty() ? "text/plain" : mime;
    content["text"] = std::move(file.content);
  } else {
    content["mimeType"] = mime.empty() ? "application/octet-stream" : mime;
    content["blob"] = base64_encode(file.content);
  }
  return json{{"result", {{"contents", json::array({std::move(content)})}}}};
}

}  // namespace sandgate::server
