#include "server/gateway/process_memory.hpp"

#include <unistd.h>

#include <cstdio>

namespace sandgate::server {

std::uint64_t process_resident_bytes() {
  std::FILE* statm = std::fopen("/proc/self/statm", "re");
  if (!statm) return 0;
  unsigned long long size_pages = 0, resident_pages = 0;
  const int read = std::fscanf(statm, "%llu %llu", &size_pages, &resident_pages);
  std::fclose(statm);
  if (read != 2) return 0;
  const long page = sysconf(_SC_PAGESIZE);
  return resident_pages * static_cast<std::uint64_t>(page > 0 ? page : 4096);
}

}  // namespace sandgate::server
