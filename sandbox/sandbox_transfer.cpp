// Sandbox::write_files and read_files: the gateway's side of a transfer process.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <cerrno>
#include <cstring>

#include "call_io.hpp"
#include "common/durable_file.hpp"
#include "fd_passing.hpp"
#include "protocol.hpp"
#include "sandbox.hpp"

namespace sandgate::sandbox {
namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {

// Writing or reading tens of MiB in a tmpfs takes well under a second; a transfer still
// running after this is stuck and is killed.
constexpr auto kTransferTimeout = std::chrono::seconds(30);
// A reply entry's fixed part (status, errno, size, two lengths).
constexpr std::uint64_t kEntryOverhead = 4 + 4 + 8 + 4 + 8;

UniqueFd memfd_with(const char* name, const std::string& bytes) {
  UniqueFd fd(::memfd_create(name, MFD_CLOEXEC));
  if (!fd) throw std::system_error(errno, std::generic_category(), "memfd_create");
  if (!write_all(fd.get(), bytes))
    throw std::system_error(errno, std::generic_category(), "write memfd");
  return fd;
}

// What the model or the operator reads when the transfer process reported errno `e`: the
// errnos each operation gives a meaning of its own (transfer_process.cpp, work_archive_process.cpp)
// in words, the rest as the system says them.
std::string transfer_failure(TransferOp op, int e) {
  if (op == TransferOp::read_dir && e == ENOENT) return "no such directory";
  if (op == TransferOp::read_dir && e == ENOTDIR) return "not a directory";
  if (op == TransferOp::unpack && e == EIO)
    return "the archive could not be unpacked (damaged, or larger than /work)";
  if (op == TransferOp::unpack && e == ENOENT)
    return "the archive is zstd-compressed and this host's /usr has no zstd";
  if ((op == TransferOp::pack || op == TransferOp::unpack) && e == EAGAIN)
    return "tar or its compressor could not be started in the sandbox (its process limit?)";
  return std::string("the transfer failed: ") + std::strerror(e);
}

// The reply memfd's bytes, refused when longer than any honest reply could be.
std::optional<std::string> read_reply(int fd, std::uint64_t bound) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < 0 || static_cast<std::uint64_t>(st.st_size) > bound)
    return std::nullopt;
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    done += static_cast<std::size_t>(n);
  }
  return bytes;
}

TransferredFile invalid(std::string path) {
  TransferredFile f;
  f.path = std::move(path);
  f.status = FileStatus::invalid_path;
  return f;
}

}  // namespace

asio::awaitable<TransferResult> Sandbox::write_files(std::vector<FileIn> files) {
  TransferRequest request{TransferOp::write, false, 0, 0, 0, {}};
  for (auto& file : files) {
    auto path = work_relative_path(file.path);
    if (!path) {
      TransferResult refused;
      refused.failure = "`" + file.path.substr(0, 200) + "` is not a path under /work";
      co_return refused;
    }
    request.files.emplace_back(std::move(*path), std::move(file.content));
  }
  if (request.files.empty()) co_return TransferResult{true, "", {}};
  co_return co_await transfer(request);
}

asio::awaitable<TransferResult> Sandbox::read_files(FileReadRequest what) {
  TransferRequest request{what.directory.empty() ? TransferOp::read : TransferOp::read_dir,
                          what.remove_after,
                          what.max_bytes_each,
                          what.max_bytes_total,
                          std::min<std::uint32_t>(what.max_files, kMaxTransferFiles),
                          {}};
  if (request.op == TransferOp::read_dir) {
    auto dir = work_relative_path(what.directory);
    if (!dir) co_return TransferResult{true, "", {invalid(what.directory.substr(0, 200))}};
    request.files.emplace_back(std::move(*dir), "");
    co_return co_await transfer(request);
  }
  // Paths outside /work never reach the sandbox; the others keep their place in the answer.
  std::vector<std::optional<std::string>> confined;
  for (const auto& path : what.paths) {
    confined.push_back(work_relative_path(path));
    if (confined.back()) request.files.emplace_back(*confined.back(), "");
  }
  TransferResult result{true, "", {}};
  if (!request.files.empty()) result = co_await transfer(request);
  if (!result.done) co_return result;
  std::vector<TransferredFile> merged;
  std::size_t next = 0;
  for (std::size_t i = 0; i < what.paths.size(); ++i) {
    if (!confined[i])
      merged.push_back(invalid(what.paths[i].substr(0, 200)));
    else if (next < result.files.size())
      merged.push_back(std::move(result.files[next++]));
    else  // the answer stopped short: every path asked about is still accounted for
      merged.push_back(TransferredFile{*confined[i], FileStatus::failed, 0, 0, {}});
  }
  result.files = std::move(merged);
  co_return result;
}

asio::awaitable<bool> Sandbox::run_transfer(const TransferRequest& request, int reply,
                                            std::string& failure) {
  auto self = shared_from_this();
  auto executor = co_await asio::this_coro::executor;
  std::uint32_t call_id = next_call_id_++;
  Pipe status = make_pipe();
  {
    UniqueFd encoded = memfd_with("sandgate-transfer", encode_request(request));
    std::lock_guard lock(mutex_);
    if (end_reason_ != EndReason::none) {
      failure = "the sandbox has ended (" + end_detail_ + ")";
      co_return false;
    }
    protocol::Header header{protocol::MessageType::transfer, call_id, protocol::Language::python,
                            0};
    int fds[protocol::kTransferFdCount] = {encoded.get(), reply, status.write.get()};
    if (send_message(control_.get(), &header, sizeof header, fds) != 0) {
      end_locked(EndReason::failed, "the sandbox's supervisor does not answer");
      failure = "the sandbox failed";
      co_return false;
    }
  }
  status.write.reset();
  Descriptor status_pipe(executor, status.read.release());
  asio::steady_timer deadline(executor, kTransferTimeout);
  auto first = co_await (read_status(status_pipe) || deadline.async_wait(kTuple));
  if (first.index() == 1) {
    if (!co_await kill_call(call_id)) end(EndReason::failed, "the sandbox did not stop a transfer");
    failure = "moving the files took longer than " + std::to_string(kTransferTimeout.count()) +
              " s and was stopped";
    co_return false;
  }
  auto ended_with = std::get<0>(first);
  check();
  if (!ended_with) {
    failure = ended() ? "the sandbox has ended (" + end_detail() + ")"
                      : "the transfer process ended without a word";
    co_return false;
  }
  if (ended_with->kind != protocol::StatusKind::exited || ended_with->value != 0) {
    failure = transfer_failure(request.op, ended_with->value);
    co_return false;
  }
  co_return true;
}

asio::awaitable<TransferResult> Sandbox::transfer(const TransferRequest& request) {
  TransferResult result;
  UniqueFd reply(::memfd_create("sandgate-transfer-reply", MFD_CLOEXEC));
  if (!reply) throw std::system_error(errno, std::generic_category(), "memfd_create");
  if (!co_await run_transfer(request, reply.get(), result.failure)) co_return result;
  std::uint64_t count =
      request.op == TransferOp::read_dir ? request.max_files : request.files.size();
  std::uint64_t bound = count * (kEntryOverhead + kMaxTransferPath) +
                        (request.op == TransferOp::write ? 0 : request.max_bytes_total);
  auto bytes = read_reply(reply.get(), bound);
  auto files = bytes ? decode_reply(*bytes, request) : std::nullopt;
  if (!files) {
    result.failure = "the sandbox's answer was malformed";
    co_return result;
  }
  result.done = true;
  result.files = std::move(*files);
  co_return result;
}

asio::awaitable<WorkArchive> Sandbox::pack_work() {
  WorkArchive out;
  TransferRequest request{TransferOp::pack, false, 0, 0, 0, {}};
  UniqueFd reply(::memfd_create("sandgate-work-archive", MFD_CLOEXEC));
  if (!reply) throw std::system_error(errno, std::generic_category(), "memfd_create");
  if (!co_await run_transfer(request, reply.get(), out.failure)) co_return out;
  // Written inside the sandbox (its memory cgroup pays for the memfd); never read here.
  struct stat st {};
  if (::fstat(reply.get(), &st) != 0 || st.st_size <= 0) {
    out.failure = "the packed /work is empty";
    co_return out;
  }
  if (static_cast<std::uint64_t>(st.st_size) > limits_.work_bytes) {
    out.failure = "the packed /work is larger than /work itself";
    co_return out;
  }
  out.done = true;
  out.size = static_cast<std::uint64_t>(st.st_size);
  out.fd = std::move(reply);
  co_return out;
}

asio::awaitable<TransferResult> Sandbox::restore_work(UniqueFd archive) {
  TransferResult result;
  struct stat st {};
  if (!archive || ::fstat(archive.get(), &st) != 0) {
    result.failure = "the archive cannot be read";
    co_return result;
  }
  if (static_cast<std::uint64_t>(st.st_size) > limits_.work_bytes) {
    result.failure = "the archive is larger than /work";
    co_return result;
  }
  TransferRequest request{TransferOp::unpack, false, 0, 0, 0, {}};
  // The archive goes where a reply would: the sandbox reads it through this descriptor in place
  // (a read-only one of the stored file: what it names on the host stays out of reach).
  if (!co_await run_transfer(request, archive.get(), result.failure)) co_return result;
  result.done = true;
  co_return result;
}

asio::awaitable<TransferResult> Sandbox::restore_work(const std::string& archive) {
  if (archive.size() > limits_.work_bytes) {
    TransferResult result;
    result.failure = "the archive is larger than /work";
    co_return result;
  }
  co_return co_await restore_work(memfd_with("sandgate-work-archive", archive));
}

}  // namespace sandgate::sandbox
