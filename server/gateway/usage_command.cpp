#include "server/gateway/usage_command.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "ledger/ledger_config.hpp"
#include "ledger/postgres_ledger.hpp"
#include "ledger/sqlite_ledger.hpp"
#include "server/gateway/postgres_ledger_open.hpp"

namespace sandgate::server {
namespace {

constexpr const char* kHelp =
    "usage: sandgate usage [--state-dir DIR | --ledger postgresql://… [--ledger-password-file F]]\n"
    "                      [--tenant T] [--since DATE] [--until DATE]\n"
    "                      [--by tenant|day|session|upstream] [--format table|csv|json]\n"
    "Reads the usage ledger the gateway writes (also while it runs): in DIR (default:\n"
    "$SANDGATE_STATE_DIR), or the PostgreSQL database --ledger names (default: $SANDGATE_LEDGER;\n"
    "the password from F, default $SANDGATE_LEDGER_PASSWORD_FILE).\n"
    "DATE: a UTC day (2026-12-01) or instant (2026-12-01T12:00:00Z); --since inclusive,\n"
    "--until exclusive. Days are UTC calendar days.\n"
    "--by upstream: the calls sandboxes made to each upstream MCP server (code mode), and\n"
    "what their prices came to (part of the sandboxes' USD, not in addition to it).\n";

struct UsageArgs {
  std::string state_dir;
  ledger::LedgerConfig ledger;  // postgres_url set: that database, not the state directory
  ledger::UsageQuery query;
  ledger::Grouping grouping = ledger::Grouping::tenant;
  std::string format = "table";
};

// A UTC day or instant; nullopt when it is neither.
std::optional<ledger::Clock::time_point> parse_utc(const std::string& text) {
  static const std::regex shape(R"((\d{4})-(\d{2})-(\d{2})(T(\d{2}):(\d{2}):(\d{2})Z)?)");
  std::smatch m;
  if (!std::regex_match(text, m, shape)) return std::nullopt;
  using namespace std::chrono;
  // Within what the clock's nanoseconds can hold (1677–2262), and what a ledger can hold.
  if (int y = std::stoi(m[1]); y < 1970 || y > 2200) return std::nullopt;
  year_month_day day{year{std::stoi(m[1])}, month{static_cast<unsigned>(std::stoi(m[2]))},
                     std::chrono::day{static_cast<unsigned>(std::stoi(m[3]))}};
  if (!day.ok()) return std::nullopt;
  auto at = ledger::Clock::time_point(sys_days{day});
  if (m[4].matched) {
    int h = std::stoi(m[5]), mi = std::stoi(m[6]), s = std::stoi(m[7]);
    if (h > 23 || mi > 59 || s > 59) return std::nullopt;
    at += hours(h) + minutes(mi) + seconds(s);
  }
  return at;
}

std::string env_value(char** envp, const char* name) {
  const std::size_t n = std::strlen(name);
  for (char** e = envp; e && *e; ++e)
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return "";
}

// One flag with its value into `out` (--ledger into `ledger`, read once all are); false with a
// message when the flag is unknown or its value wrong.
bool apply_flag(const std::string& flag, const std::string& value, UsageArgs& out,
                std::string& ledger, std::string& message) {
  if (flag == "--state-dir") {
    out.state_dir = value;
  } else if (flag == "--ledger") {
    ledger = value;
  } else if (flag == "--ledger-password-file") {
    out.ledger.postgres_password_file = value;
  } else if (flag == "--tenant") {
    out.query.tenant = value;
  } else if (flag == "--since" || flag == "--until") {
    auto at = parse_utc(value);
    if (!at) {
      message = "sandgate usage: " + flag + " " + value +
                ": expected a UTC day (2026-12-01) or instant (2026-12-01T12:00:00Z)\n";
      return false;
    }
    (flag == "--since" ? out.query.since : out.query.until) = at;
  } else if (flag == "--by") {
    if (value == "tenant")
      out.grouping = ledger::Grouping::tenant;
    else if (value == "day")
      out.grouping = ledger::Grouping::day;
    else if (value == "session")
      out.grouping = ledger::Grouping::owner;
    else if (value == "upstream")
      out.grouping = ledger::Grouping::upstream;
    else {
      message = "sandgate usage: --by " + value + ": expected tenant, day, session or upstream\n";
      return false;
    }
  } else if (flag == "--format") {
    if (value != "table" && value != "csv" && value != "json") {
      message = "sandgate usage: --format " + value + ": expected table, csv or json\n";
      return false;
    }
    out.format = value;
  } else {
    message = "sandgate usage: unknown option " + flag + "\n" + kHelp;
    return false;
  }
  return true;
}

// Which ledger to read (--ledger, else SQLite in --state-dir) into out.ledger; false with a
// message when there is none to read.
bool choose_ledger(const std::string& ledger, UsageArgs& out, std::string& message) {
  if (ledger::is_postgres_url(ledger)) {
    if (auto refusal = ledger::postgres_url_refusal(ledger); !refusal.empty()) {
      message = "sandgate usage: --ledger: " + refusal + "\n";
      return false;
    }
    out.ledger.kind = ledger::LedgerKind::postgres;
    out.ledger.postgres_url = ledger;
    return true;
  }
  if (!ledger.empty() && ledger != "sqlite") {
    message = "sandgate usage: --ledger " + std::string(ledger == "off" ? "off" : "value") +
              ": expected sqlite or a postgresql:// URI (with off nothing is recorded)\n";
    return false;
  }
  if (out.state_dir.empty()) {
    message = "sandgate usage: no --state-dir (or SANDGATE_STATE_DIR): the ledger is there\n";
    return false;
  }
  return true;
}

// Parses `args`; a message (and no args) for a usage error or --help.
std::optional<UsageArgs> parse(const std::vector<std::string>& args, char** envp,
                               std::string& message) {
  UsageArgs out;
  out.state_dir = env_value(envp, "SANDGATE_STATE_DIR");
  std::string ledger = env_value(envp, "SANDGATE_LEDGER");
  out.ledger.postgres_password_file = env_value(envp, "SANDGATE_LEDGER_PASSWORD_FILE");
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "--help" || flag == "-h") {
      message = kHelp;
      return std::nullopt;
    }
    if (i + 1 >= args.size()) {
      message = "sandgate usage: " + flag + " needs a value (or is unknown)\n" + kHelp;
      return std::nullopt;
    }
    const std::string& value = args[++i];
    if (!apply_flag(flag, value, out, ledger, message)) return std::nullopt;
  }
  if (!choose_ledger(ledger, out, message)) return std::nullopt;
  return out;
}

std::string number(double value, int decimals) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(decimals) << value;
  return s.str();
}

// Names come from tokens files and identity providers: shown, never obeyed (no terminal
// controls in a table, no formula in a spreadsheet cell).
std::string printable(const std::string& text) {
  std::string out = text;
  // ASCII only: a byte above it could be half of a C1 control to an 8-bit terminal.
  for (auto& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return out;
}

std::string csv_cell(const std::string& text) {
  std::string cell = printable(text);
  if (!cell.empty() && std::strchr("=+-@", cell[0])) cell.insert(0, "'");
  if (cell.find_first_of(",\"") == std::string::npos) return cell;
  std::string quoted = "\"";
  for (char c : cell) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// One column of the output: its name in JSON and CSV, its table heading, and a row's value
// (a number: `decimals` for the table, `csv_decimals` for CSV; -1: an integer; a name: text).
struct Column {
  const char* key;
  const char* heading;
  bool name;
  std::function<nlohmann::json(const ledger::UsageRow&)> value;
  int decimals = -1, csv_decimals = -1;
};

std::vector<Column> columns_of(ledger::Grouping grouping) {
  using Row = ledger::UsageRow;
  std::vector<Column> columns = {
      {"tenant", "TENANT", true, [](const Row& r) { return nlohmann::json(r.tenant); }}};
  auto group = [](const Row& r) { return nlohmann::json(r.group); };
  if (grouping == ledger::Grouping::day) columns.push_back({"day", "DAY (UTC)", true, group});
  if (grouping == ledger::Grouping::owner) columns.push_back({"session", "SESSION", true, group});
  if (grouping == ledger::Grouping::upstream) {
    columns.push_back({"upstream", "UPSTREAM", true, group});
    columns.push_back(
        {"tool_calls", "TOOL CALLS", false, [](const Row& r) { return r.tool_calls; }});
    columns.push_back({"usd", "USD", false, [](const Row& r) { return r.usd; }, 6, 6});
    return columns;
  }
  std::vector<Column> totals = {
      {"usd", "USD", false, [](const Row& r) { return r.usd; }, 6, 6},
      {"cpu_seconds", "CPU S", false, [](const Row& r) { return r.cpu_seconds; }, 1, 3},
      {"gib_seconds", "GIB S", false, [](const Row& r) { return r.gib_seconds; }, 1, 3},
      {"wall_seconds", "WALL S", false, [](const Row& r) { return r.wall_seconds; }, 1, 3},
      {"calls", "CALLS", false, [](const Row& r) { return r.calls; }},
      {"output_bytes", "OUTPUT BYTES", false, [](const Row& r) { return r.output_bytes; }},
      {"tool_calls", "TOOL CALLS", false, [](const Row& r) { return r.tool_calls; }}};
  columns.insert(columns.end(), totals.begin(), totals.end());
  return columns;
}

std::string cell_text(const Column& column, const ledger::UsageRow& row, int decimals) {
  auto v = column.value(row);
  if (v.is_string()) return v.get<std::string>();
  if (decimals >= 0) return number(v.get<double>(), decimals);
  return std::to_string(v.get<std::uint64_t>());
}

void write_json(const std::vector<ledger::UsageRow>& rows, const std::vector<Column>& columns,
                std::ostream& out) {
  auto all = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json row = nlohmann::json::object();
    for (const auto& c : columns) row[c.key] = c.value(r);
    all.push_back(std::move(row));
  }
  out << all.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

void write_csv(const std::vector<ledger::UsageRow>& rows, const std::vector<Column>& columns,
               std::ostream& out) {
  for (std::size_t i = 0; i < columns.size(); ++i)
    out << columns[i].key << (i + 1 < columns.size() ? "," : "\n");
  for (const auto& r : rows)
    for (std::size_t i = 0; i < columns.size(); ++i) {
      const auto& c = columns[i];
      auto text = cell_text(c, r, c.csv_decimals);
      out << (c.name ? csv_cell(text) : text) << (i + 1 < columns.size() ? "," : "\n");
    }
}

void write_table(const std::vector<ledger::UsageRow>& rows, const std::vector<Column>& columns,
                 ledger::Grouping grouping, std::ostream& out) {
  std::vector<std::vector<std::string>> cells(1);
  for (const auto& c : columns) cells[0].push_back(c.heading);
  ledger::UsageRow total;
  for (const auto& r : rows) {
    auto& line = cells.emplace_back();
    for (const auto& c : columns)
      line.push_back(c.name ? printable(cell_text(c, r, -1)) : cell_text(c, r, c.decimals));
    total.usd += r.usd;
    total.calls += r.calls;
    total.tool_calls += r.tool_calls;
  }
  std::vector<std::size_t> width(columns.size(), 0);
  for (const auto& line : cells)
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  for (const auto& line : cells)
    for (std::size_t i = 0; i < line.size(); ++i)
      // Names to the left, numbers to the right.
      out << (columns[i].name ? std::left : std::right) << std::setw(static_cast<int>(width[i]))
          << line[i] << (i + 1 < line.size() ? "  " : "\n");
  const char* rows_word = rows.size() == 1 ? " row\n" : " rows\n";
  if (grouping == ledger::Grouping::upstream)
    out << "total: " << total.tool_calls << " tool calls, $" << number(total.usd, 6) << ", "
        << rows.size() << rows_word;
  else
    out << "total: $" << number(total.usd, 6) << " in " << total.calls << " calls, " << rows.size()
        << rows_word;
}

}  // namespace

int usage_command(const std::vector<std::string>& args, char** envp, std::ostream& out,
                  std::ostream& err) {
  std::string message;
  auto parsed = parse(args, envp, message);
  if (!parsed) {
    bool help = message == kHelp;
    (help ? out : err) << message;
    return help ? 0 : 2;
  }
  try {
    std::shared_ptr<ledger::LedgerStore> store;
    if (parsed->ledger.kind == ledger::LedgerKind::postgres) {
      store = open_postgres_ledger(parsed->ledger, ledger::PostgresLedger::Access::read_only);
    } else {
      const auto path = ledger::sqlite_ledger_path(parsed->state_dir);
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) {
        // Opening would make an empty ledger: a reader never writes.
        err << "sandgate usage: no ledger at " << path.string()
            << " (nothing recorded yet, or another --state-dir)\n";
        return 1;
      }
      store = std::make_shared<ledger::SqliteLedger>(path, ledger::SqliteLedger::Access::read_only);
    }
    auto rows = store->usage(parsed->query, parsed->grouping);
    auto columns = columns_of(parsed->grouping);
    if (parsed->format == "json")
      write_json(rows, columns, out);
    else if (parsed->format == "csv")
      write_csv(rows, columns, out);
    else
      write_table(rows, columns, parsed->grouping, out);
  } catch (const std::exception& e) {
    err << "sandgate usage: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace sandgate::server
