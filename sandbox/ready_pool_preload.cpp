// What ready sandboxes are built with: the preload modules and their warm-up cell, and which
// requests a ready sandbox can serve (ready_pool.hpp).
#include <cctype>

#include "ready_pool.hpp"

namespace sandgate::sandbox {

std::string preload_name_problem(std::string_view name) {
  if (name.empty() || name.size() > 200) return "a module name must have 1 to 200 characters";
  bool part_start = true;
  for (char c : name) {
    bool letter = std::isalpha(static_cast<unsigned char>(c)) || c == '_';
    bool digit = std::isdigit(static_cast<unsigned char>(c));
    if (c == '.') {
      if (part_start) return "'" + std::string(name) + "' is not a dotted Python module name";
      part_start = true;
    } else if (letter || (digit && !part_start)) {
      part_start = false;
    } else {
      return "'" + std::string(name) + "' is not a dotted Python module name";
    }
  }
  if (part_start) return "'" + std::string(name) + "' is not a dotted Python module name";
  return "";
}

std::string preload_cell(const std::vector<std::string>& modules) {
  std::string list;
  for (const auto& m : modules) {
    if (!preload_name_problem(m).empty()) continue;  // the options refused it already
    list += "'" + m + "', ";
  }
  // Every name the cell makes is deleted at its end: the first cell of the session that gets
  // this sandbox finds an empty namespace, with the modules in sys.modules (its `import` is a
  // lookup).
  return "import importlib as _sg_importlib, os as _sg_os, tempfile as _sg_tempfile\n"
         "_sg_dir = _sg_tempfile.mkdtemp(prefix='sandgate-preload-')\n"
         "_sg_saved = {_sg_name: _sg_os.environ.get(_sg_name)\n"
         "             for _sg_name in ('HOME', 'MPLCONFIGDIR', 'XDG_CACHE_HOME')}\n"
         "for _sg_name in _sg_saved:\n"
         "    _sg_os.environ[_sg_name] = _sg_dir\n"
         "_sg_module = None\n"
         "for _sg_module in [" +
         list +
         "]:\n"
         "    try:\n"
         "        _sg_importlib.import_module(_sg_module)\n"
         "    except (Exception, SystemExit):\n"
         "        pass\n"
         "for _sg_name, _sg_value in _sg_saved.items():\n"
         "    if _sg_value is None:\n"
         "        _sg_os.environ.pop(_sg_name, None)\n"
         "    else:\n"
         "        _sg_os.environ[_sg_name] = _sg_value\n"
         "if _sg_os.listdir('/work'):\n"
         "    raise SystemExit('the preload wrote into /work')\n"
         "del _sg_importlib, _sg_os, _sg_tempfile, _sg_dir, _sg_saved, _sg_name, _sg_value, "
         "_sg_module\n";
}

bool pool_serves(const Limits& built, const Limits& wanted) {
  return built.memory_bytes == wanted.memory_bytes && built.cpus == wanted.cpus &&
         built.max_processes == wanted.max_processes && built.work_bytes == wanted.work_bytes &&
         built.tmp_bytes == wanted.tmp_bytes && built.egress == wanted.egress &&
         built.layer_dir == wanted.layer_dir && built.layer_writable == wanted.layer_writable &&
         built.egress_gateway_ca == wanted.egress_gateway_ca &&
         built.tool_channel == wanted.tool_channel;
}

}  // namespace sandgate::sandbox
