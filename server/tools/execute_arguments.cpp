#include "execute_arguments.hpp"

#include <cmath>
#include <optional>

#include "common/base64.hpp"
#include "execute_schema.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
using nlohmann::json;

namespace {

// "\"python\", \"javascript\", \"bash\"", for messages.
std::string quoted_language_list() {
  std::string list;
  for (const auto& name : language_names()) list += (list.empty() ? "" : ", ") + name.dump();
  return list;
}

// "`files`[2]": where in the arguments a problem is.
std::string at(const char* name, std::size_t index) {
  return "`" + std::string(name) + "`[" + std::to_string(index) + "]";
}

// One of `files`: {path, content, encoding?} -> what to write; nothing, with `why` set (what is
// wrong with it), when invalid.
std::optional<sandbox::FileIn> parse_file_in(const json& f, const ToolLimits& limits,
                                             std::string& why) {
  auto fail = [&](std::string what) -> std::optional<sandbox::FileIn> {
    why = std::move(what);
    return std::nullopt;
  };
  if (!f.is_object()) return fail("must be an object {path, content, encoding?}.");
  for (const auto& [key, value] : f.items())
    if (key != "path" && key != "content" && key != "encoding")
      return fail("has an unknown key; expected path, content, encoding.");
  if (!f.contains("path") || !f["path"].is_string()) return fail("needs `path`, a string.");
  if (!f.contains("content") || !f["content"].is_string())
    return fail("needs `content`, a string.");
  const auto& path = f["path"].get_ref<const std::string&>();
  if (!sandbox::work_relative_path(path))
    return fail(
        "`path` must name a file under /work (relative, or absolute under /work; no "
        "`..`).");
  std::string encoding = "utf-8";
  if (f.contains("encoding")) {
    if (!f["encoding"].is_string() || (f["encoding"] != "utf-8" && f["encoding"] != "base64"))
      return fail("`encoding` must be \"utf-8\" or \"base64\".");
    encoding = f["encoding"].get<std::string>();
  }
  const auto& text = f["content"].get_ref<const std::string&>();
  // Checked before decoding: base64 is 4/3 of its bytes.
  if (text.size() / (encoding == "base64" ? 4 : 3) * 3 > limits.file_in_max_bytes + 3)
    return fail("is larger than " + std::to_string(limits.file_in_max_bytes) +
                " bytes, the cap for one file.");
  sandbox::FileIn in{path, {}};
  if (encoding == "base64") {
    auto decoded = base64_decode(text);
    if (!decoded) return fail("`content` is not valid base64 (standard alphabet, padded).");
    in.content = std::move(*decoded);
  } else {
    in.content = text;
  }
  if (in.content.size() > limits.file_in_max_bytes)
    return fail("is larger than " + std::to_string(limits.file_in_max_bytes) +
                " bytes, the cap for one file.");
  return in;
}

// `files`: [{path, content, encoding?}] -> what to write; empty with `error` set when invalid.
std::vector<sandbox::FileIn> parse_files_in(const json& files, const ToolLimits& limits,
                                            std::string& error) {
  std::vector<sandbox::FileIn> out;
  if (!files.is_array()) {
    error = "`files` must be an array of {path, content, encoding?}.";
    return {};
  }
  if (files.size() > limits.files_in_max_count) {
    error = "`files` has more than " + std::to_string(limits.files_in_max_count) + " files.";
    return {};
  }
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::string why;
    auto in = parse_file_in(files[i], limits, why);
    if (!in) {
      error = at("files", i) + " " + why;
      return {};
    }
    total += in->content.size();
    if (total > limits.files_in_max_bytes) {
      error = "`files` hold more than " + std::to_string(limits.files_in_max_bytes) +
              " bytes, the cap for one call.";
      return {};
    }
    out.push_back(std::move(*in));
  }
  return out;
}

// `return_files`: [path, …].
std::vector<std::string> parse_return_files(const json& paths, const ToolLimits& limits,
                                            std::string& error) {
  if (!paths.is_array()) {
    error = "`return_files` must be an array of paths under /work.";
    return {};
  }
  if (paths.size() > limits.return_files_max) {
    error = "`return_files` names more than " + std::to_string(limits.return_files_max) + " files.";
    return {};
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (!paths[i].is_string() || !sandbox::work_relative_path(paths[i].get<std::string>())) {
      error = at("return_files", i) +
              " must name a file under /work (relative, or absolute under /work; no `..`).";
      return {};
    }
    out.push_back(paths[i].get<std::string>());
  }
  return out;
}

// `timeout_seconds`: a whole number of seconds within the limit (a task's when it runs as one);
// the default when absent. Sets `error` when invalid.
std::chrono::seconds parse_timeout(const json& args, const ToolLimits& limits, bool as_task,
                                   std::string& error) {
  auto t = args.find("timeout_seconds");
  if (t == args.end()) return std::chrono::seconds(limits.timeout_default_s);
  bool whole = t->is_number_integer() ||
               (t->is_number_float() && std::floor(t->get<double>()) == t->get<double>());
  if (!whole) {
    error = "`timeout_seconds` must be a whole number of seconds.";
    return {};
  }
  double v = t->get<double>();
  std::uint32_t most = as_task ? limits.task_timeout_max_s : limits.timeout_max_s;
  if (v < 1 || v > most) {
    error = "`timeout_seconds` must be between 1 and " + std::to_string(most) +
            (as_task || limits.task_timeout_max_s <= limits.timeout_max_s
                 ? std::string(".")
                 : "; run the call as a task for up to " +
                       std::to_string(limits.task_timeout_max_s) + " s.");
    return {};
  }
  return std::chrono::seconds(static_cast<std::int64_t>(v));
}

// `sandbox_id`: one of our handles, or empty when absent. Sets `error` when invalid.
std::string parse_sandbox_id(const json& args, std::string& error) {
  auto id = args.find("sandbox_id");
  if (id == args.end() || id->is_null()) return "";
  if (!id->is_string()) {
    error = "`sandbox_id` must be a string.";
    return "";
  }
  // Hostile text: never echoed back unless it has the shape of one of our handles.
  if (!session::looks_like_handle(id->get_ref<const std::string&>())) {
    error = "`sandbox_id` is not a sandbox id this gateway made; omit it to start a new sandbox.";
    return "";
  }
  return id->get<std::string>();
}

// `environment`: an environment's name, or empty when absent. Sets `error` when invalid; the
// name is echoed back only once it has the shape of one (environment/definition.hpp).
std::string parse_environment(const json& args, std::string& error) {
  auto name = args.find("environment");
  if (name == args.end() || name->is_null()) return "";
  const std::string* text = name->is_string() ? &name->get_ref<const std::string&>() : nullptr;
  bool shaped = text && !text->empty() && text->size() <= 63 && (*text)[0] != '-' &&
                (*text)[0] != '_';
  if (shaped)
    for (char c : *text)
      shaped = shaped && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_');
  if (!shaped) {
    error = "`environment` must be the name of one of your environments (the tool's description "
            "lists them), or omitted.";
    return "";
  }
  return *text;
}

}  // namespace

ExecuteArguments parse_execute_arguments(const json& args, const ToolLimits& limits, bool as_task) {
  auto fail = [](std::string why) {
    return ExecuteArguments{std::nullopt, "", "Invalid arguments: " + why, {}, ""};
  };
  if (!args.is_object()) return fail("arguments must be an object with at least `code`.");
  for (const auto& [key, value] : args.items()) {
    if (key != "code" && key != "language" && key != "timeout_seconds" && key != "stdin" &&
        key != "sandbox_id" && key != "fresh" && key != "files" && key != "return_files" &&
        key != "environment")
      return fail("unknown argument `" + key +
                  "`; expected code, language, timeout_seconds, stdin, fresh, sandbox_id, files, "
                  "return_files, environment.");
  }
  sandbox::RunRequest r;
  auto code = args.find("code");
  if (code == args.end() || !code->is_string() || code->get_ref<const std::string&>().empty())
    return fail("`code` must be a non-empty string.");
  r.code = code->get<std::string>();
  if (r.code.find('\0') != std::string::npos)
    return fail("`code` must not contain NUL characters.");
  if (auto lang = args.find("language"); lang != args.end()) {
    auto parsed =
        lang->is_string() ? sandbox::parse_language(lang->get<std::string>()) : std::nullopt;
    if (!parsed) return fail("`language` must be one of " + quoted_language_list() + ".");
    r.language = *parsed;
  }
  std::string problem;
  r.timeout = parse_timeout(args, limits, as_task, problem);
  if (!problem.empty()) return fail(problem);
  if (auto in = args.find("stdin"); in != args.end() && !in->is_null()) {
    if (!in->is_string()) return fail("`stdin` must be a string.");
    if (in->get_ref<const std::string&>().size() > limits.stdin_max_bytes)
      return fail("`stdin` is larger than " + std::to_string(limits.stdin_max_bytes) + " bytes.");
    r.stdin_data = in->get<std::string>();
  }
  if (auto fresh = args.find("fresh"); fresh != args.end() && !fresh->is_null()) {
    if (!fresh->is_boolean()) return fail("`fresh` must be true or false.");
    r.fresh = fresh->get<bool>();
  }
  std::string sandbox_id = parse_sandbox_id(args, problem);
  if (!problem.empty()) return fail(problem);
  session::CallFiles files;
  if (auto in = args.find("files"); in != args.end() && !in->is_null()) {
    files.in = parse_files_in(*in, limits, problem);
    if (!problem.empty()) return fail(problem);
  }
  if (auto out = args.find("return_files"); out != args.end() && !out->is_null()) {
    files.out.paths = parse_return_files(*out, limits, problem);
    if (!problem.empty()) return fail(problem);
    files.out.max_bytes_each = limits.file_inline_max_bytes;
    files.out.max_bytes_total = 4 * limits.file_inline_max_bytes;
  }
  std::string environment = parse_environment(args, problem);
  if (!problem.empty()) return fail(problem);
  return {std::move(r), std::move(sandbox_id), "", std::move(files), std::move(environment)};
}

}  // namespace sandgate::server
