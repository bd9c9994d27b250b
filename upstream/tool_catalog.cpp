#include "upstream/tool_catalog.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <mutex>

#include "upstream/flight.hpp"
#include "upstream/http_exchange.hpp"

namespace sandgate::upstream {
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using Kind = UpstreamError::Kind;

namespace {

class Catalog final : public ToolCatalog, public std::enable_shared_from_this<Catalog> {
 public:
  Catalog(asio::any_io_executor executor, std::shared_ptr<const UpstreamDefinition> definition)
      : executor_(executor),
        definition_(definition),
        client_(McpClient::create(executor, definition)) {}
  ~Catalog() override { client_->close(); }

  asio::awaitable<std::shared_ptr<const ToolList>> tools(Clock::time_point deadline) override {
    auto state = co_await asio::this_coro::cancellation_state;
    const auto start = Clock::now();
    std::shared_ptr<Flight> flight;
    bool mine = false;
    {
      std::lock_guard lock(mutex_);
      if (list_ && !invalid_ && !client_->tools_changed() &&
          Clock::now() - fetched_at_ < list_->ttl)
        co_return list_;
      if (!flight_) {
        flight_ = std::make_shared<Flight>(executor_);
        mine = true;
      }
      flight = flight_;
    }
    // The fetch is nobody's own: a caller that gives up (cancelled, its deadline) leaves it to
    // the others.
    if (mine)
      asio::co_spawn(executor_, fetch(shared_from_this(), flight, deadline), asio::detached);
    if (!co_await flight->wait(deadline)) {
      if (state.cancelled() != asio::cancellation_type::none)
        throw UpstreamError(Kind::cancelled,
                            "the tool list of upstream '" + definition_->name + "' was cancelled");
      throw UpstreamError(Kind::timeout, "upstream '" + definition_->name +
                                             "' did not list its tools within " +
                                             describe_budget(deadline - start));
    }
    if (auto error = flight->error()) throw *error;
    std::lock_guard lock(mutex_);
    co_return list_;
  }

  void invalidate() override {
    std::lock_guard lock(mutex_);
    invalid_ = true;
    ++generation_;
  }

  const UpstreamDefinition& definition() const override { return *definition_; }

 private:
  asio::awaitable<void> fetch([[maybe_unused]] std::shared_ptr<Catalog> self,
                              std::shared_ptr<Flight> flight, Clock::time_point deadline) {
    std::uint64_t generation;
    {
      std::lock_guard lock(mutex_);
      generation = generation_;
    }
    std::optional<UpstreamError> error;
    try {
      auto list = std::make_shared<const ToolList>(co_await client_->list_tools(deadline));
      std::lock_guard lock(mutex_);
      list_ = std::move(list);
      fetched_at_ = Clock::now();
      // An invalidate() while this list was on its way asks for a newer one next time.
      if (generation_ == generation) invalid_ = false;
    } catch (const UpstreamError& e) {
      error = e;
    } catch (const std::exception&) {
      error = UpstreamError(Kind::unreachable,
                            "upstream '" + definition_->name + "' is unreachable: network error");
    }
    {
      std::lock_guard lock(mutex_);
      if (flight_ == flight) flight_.reset();
    }
    flight->finish(std::move(error));
  }

  asio::any_io_executor executor_;
  std::shared_ptr<const UpstreamDefinition> definition_;
  std::shared_ptr<McpClient> client_;
  std::mutex mutex_;
  std::shared_ptr<const ToolList> list_;  // all guarded by mutex_
  Clock::time_point fetched_at_;
  bool invalid_ = false;
  std::uint64_t generation_ = 0;
  std::shared_ptr<Flight> flight_;
};

}  // namespace

std::shared_ptr<ToolCatalog> ToolCatalog::create(
    asio::any_io_executor executor, std::shared_ptr<const UpstreamDefinition> definition) {
  return std::make_shared<Catalog>(std::move(executor), std::move(definition));
}

}  // namespace sandgate::upstream
