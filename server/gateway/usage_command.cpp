#include "server/gateway/usage_command.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
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
    "                      [--by tenant|day|session] [--format table|csv|json]\n"
    "Reads the usage ledger the gateway writes (also while it runs): in DIR (default:\n"
    "$SANDGATE_STATE_DIR), or the PostgreSQL database --ledger names (default: $SANDGATE_LEDGER;\n"
    "the password from F, default $SANDGATE_LEDGER_PASSWORD_FILE).\n"
    "DATE: a UTC day (2026-12-01) or instant (2026-12-01T12:00:00Z); --since inclusive,\n"
    "--until exclusive. Days are UTC calendar days.\n";

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
    else {
      message = "sandgate usage: --by " + value + ": expected tenant, day or session\n";
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

const char* group_column(ledger::Grouping grouping) {
  return grouping == ledger::Grouping::day     ? "day"
         : grouping == ledger::Grouping::owner ? "session"
                                               : nullptr;
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

void write_json(const std::vector<ledger::UsageRow>& rows, ledger::Grouping grouping,
                std::ostream& out) {
  auto all = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json row = {{"tenant", r.tenant},
                          {"usd", r.usd},
                          {"cpu_seconds", r.cpu_seconds},
                          {"gib_seconds", r.gib_seconds},
                          {"wall_seconds", r.wall_seconds},
                          {"calls", r.calls},
                          {"output_bytes", r.output_bytes}};
    if (const char* column = group_column(grouping)) row[column] = r.group;
    all.push_back(std::move(row));
  }
  out << all.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

void write_csv(const std::vector<ledger::UsageRow>& rows, ledger::Grouping grouping,
               std::ostream& out) {
  const char* column = group_column(grouping);
  out << "tenant," << (column ? std::string(column) + "," : "")
      << "usd,cpu_seconds,gib_seconds,wall_seconds,calls,output_bytes\n";
  for (const auto& r : rows)
    out << csv_cell(r.tenant) << "," << (column ? csv_cell(r.group) + "," : "") << number(r.usd, 6)
        << "," << number(r.cpu_seconds, 3) << "," << number(r.gib_seconds, 3) << ","
        << number(r.wall_seconds, 3) << "," << r.calls << "," << r.output_bytes << "\n";
}

void write_table(const std::vector<ledger::UsageRow>& rows, ledger::Grouping grouping,
                 std::ostream& out) {
  const char* column = group_column(grouping);
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> head = {"TENANT"};
  if (column) head.push_back(column == std::string("day") ? "DAY (UTC)" : "SESSION");
  for (const char* h : {"USD", "CPU S", "GIB S", "WALL S", "CALLS", "OUTPUT BYTES"})
    head.push_back(h);
  cells.push_back(head);
  ledger::UsageRow total;
  for (const auto& r : rows) {
    std::vector<std::string> line = {printable(r.tenant)};
    if (column) line.push_back(printable(r.group));
    for (auto v :
         {number(r.usd, 6), number(r.cpu_seconds, 1), number(r.gib_seconds, 1),
          number(r.wall_seconds, 1), std::to_string(r.calls), std::to_string(r.output_bytes)})
      line.push_back(v);
    cells.push_back(line);
    total.usd += r.usd;
    total.calls += r.calls;
  }
  std::vector<std::size_t> width(head.size(), 0);
  for (const auto& line : cells)
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  for (const auto& line : cells) {
    for (std::size_t i = 0; i < line.size(); ++i) {
      // Names to the left, numbers to the right.
      bool name = i == 0 || (column && i == 1);
      out << (name ? std::left : std::right) << std::setw(static_cast<int>(width[i])) << line[i]
          << (i + 1 < line.size() ? "  " : "\n");
    }
  }
  out << "total: $" << number(total.usd, 6) << " in " << total.calls << " calls, " << rows.size()
      << (rows.size() == 1 ? " row\n" : " rows\n");
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
    if (parsed->format == "json")
      write_json(rows, parsed->grouping, out);
    else if (parsed->format == "csv")
      write_csv(rows, parsed->grouping, out);
    else
      write_table(rows, parsed->grouping, out);
  } catch (const std::exception& e) {
    err << "sandgate usage: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace sandgate::server
