#pragma once
// The `execute` tool: finds the sandbox a call runs in (the session's own, a handle's, or a
// new handle's), runs the program there, and maps the run to a CallToolResult. Logs and
// counts every call (metadata only).
#include "environment/environments.hpp"
#include "execute_arguments.hpp"
#include "execute_result.hpp"
#include "execute_schema.hpp"
#include "file_resources.hpp"
#include "server/metrics/metrics.hpp"
#include "session/registry.hpp"
#include "tool.hpp"

namespace sandgate::server {

class ExecuteTool final : public Tool {
 public:
  // `resources`: where returned files get their URIs (null: files come back inline only, a
  // large one as an error).
  // `environments`: the operator's (issue #43); null when there are none (every call runs in
  // "base"). `upstreams`: the operator's (issue #45); null when there are none.
  ExecuteTool(ToolLimits limits, session::Registry& registry, Metrics& metrics,
              FileResources* resources = nullptr,
              std::shared_ptr<const environment::Environments> environments = nullptr,
              std::shared_ptr<const upstream::Upstreams> upstreams = nullptr);
  const std::string& name() const override { return name_; }
  nlohmann::json definition() const override { return execute_tool_definition(limits_); }
  // With the caller's environments named, each with what it holds.
  nlohmann::json definition_for(const auth::Tenant& tenant) const override;
  TaskSupport task_support() const override { return TaskSupport::optional; }
  std::chrono::milliseconds task_answer_within() const override { return limits_.task_after; }
  boost::asio::awaitable<nlohmann::json> call(ToolCall call) override;

 private:
  // The session whose sandbox runs the call, or a tool error saying why there is none.
  struct Target {
    std::shared_ptr<session::Session> session;
    std::string handle;  // set when the sandbox is named by a handle
    bool created = false;
    nlohmann::json error;
  };
  Target target_for(const ToolCall& call, const std::string& sandbox_id);
  // Settles the environment the call runs in (its session's, or the one asked for where the
  // tenant may use it): "" when it may run, else why not, for the model.
  std::string settle_environment(session::Session& session, const auth::Tenant& tenant,
                                 const std::string& asked) const;
  // Ends a handle this call made, when the caller will never learn its id.
  void forget_unseen_handle(const Target& target, const ToolCall& call, const std::string& why);
  // What the log says of a call's request, kept before the request moves into the session.
  struct CallFacts {
    sandbox::RunRequest run;  // its code and stdin are not logged, only their sizes
    std::size_t code_bytes, stdin_bytes, files_in, files_out;
  };
  static CallFacts facts_of(const ExecuteArguments& args);
  boost::asio::awaitable<session::ExecuteResult> run_in_session(
      session::Session& session, const ToolCall& call, ExecuteArguments args,
      std::shared_ptr<sandbox::CallControl> control);
  static nlohmann::json log_fields_for(const session::Session& session, const CallFacts& facts,
                                       const session::ExecuteResult& executed);
  void attach_returned_files(nlohmann::json& result, sandbox::TransferResult& returned,
                             const ToolCall& call, const Target& target,
                             const std::shared_ptr<sandbox::Sandbox>& ran_in);

  const std::string name_ = "execute";
  ToolLimits limits_;
  session::Registry& registry_;
  Metrics& metrics_;
  FileResources* resources_;
  std::shared_ptr<const environment::Environments> environments_;
  std::shared_ptr<const upstream::Upstreams> upstreams_;  // null: no code mode
};

// Why a handle from this tenant cannot be used, in words the model can act on.
std::string handle_unusable_reason(const session::Registry& registry, const std::string& id,
                                   const std::string& tenant);

}  // namespace sandgate::server
