// libpmix, loaded when a --mpi=pmix step needs it rather than at every shoal-stepd start: the
// library and its dependencies (libevent, hwloc, udev) cost about a millisecond of start-up,
// which every srun step on every node would pay. Include after <pmix_server.h>; the PMIx_*
// names used by pmix_server.cc (directly or through PMIx's macros) then go through the table.
#pragma once

#include <dlfcn.h>

#include <string>

namespace shoal::noded::pmixdl {

struct Table {
  decltype(&::PMIx_Error_string) error_string = nullptr;
  decltype(&::PMIx_Info_load) info_load = nullptr;
  decltype(&::PMIx_Value_destruct) value_destruct = nullptr;
  decltype(&::PMIx_generate_ppn) generate_ppn = nullptr;
  decltype(&::PMIx_generate_regex) generate_regex = nullptr;
  decltype(&::PMIx_server_deregister_client) server_deregister_client = nullptr;
  decltype(&::PMIx_server_finalize) server_finalize = nullptr;
  decltype(&::PMIx_server_init) server_init = nullptr;
  decltype(&::PMIx_server_register_client) server_register_client = nullptr;
  decltype(&::PMIx_server_register_nspace) server_register_nspace = nullptr;
  decltype(&::PMIx_server_setup_fork) server_setup_fork = nullptr;
};

inline Table& Fns() {
  static Table table;
  return table;
}

// Loads libpmix once; false (with the reason) when it cannot be found or lacks a symbol.
inline bool Load(std::string* error) {
  static bool loaded = false;
  if (loaded) return true;
#ifdef SHOAL_PMIX_LIBDIR
  void* lib = ::dlopen(SHOAL_PMIX_LIBDIR "/libpmix.so.2", RTLD_NOW | RTLD_GLOBAL);
#else
  void* lib = nullptr;
#endif
  if (!lib) lib = ::dlopen("libpmix.so.2", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    const char* why = ::dlerror();
    *error = std::string("cannot load libpmix: ") + (why ? why : "not found");
    return false;
  }
  Table& t = Fns();
  bool ok = true;
  auto get = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
    if (!fn) {
      *error = std::string("libpmix lacks ") + name;
      ok = false;
    }
  };
  get(t.error_string, "PMIx_Error_string");
  get(t.info_load, "PMIx_Info_load");
  get(t.value_destruct, "PMIx_Value_destruct");
  get(t.generate_ppn, "PMIx_generate_ppn");
  get(t.generate_regex, "PMIx_generate_regex");
  get(t.server_deregister_client, "PMIx_server_deregister_client");
  get(t.server_finalize, "PMIx_server_finalize");
  get(t.server_init, "PMIx_server_init");
  get(t.server_register_client, "PMIx_server_register_client");
  get(t.server_register_nspace, "PMIx_server_register_nspace");
  get(t.server_setup_fork, "PMIx_server_setup_fork");
  loaded = ok;
  return ok;
}

}  // namespace shoal::noded::pmixdl

#define PMIx_Error_string (::shoal::noded::pmixdl::Fns().error_string)
#define PMIx_Info_load (::shoal::noded::pmixdl::Fns().info_load)
#define PMIx_Value_destruct (::shoal::noded::pmixdl::Fns().value_destruct)
#define PMIx_generate_ppn (::shoal::noded::pmixdl::Fns().generate_ppn)
#define PMIx_generate_regex (::shoal::noded::pmixdl::Fns().generate_regex)
#define PMIx_server_deregister_client (::shoal::noded::pmixdl::Fns().server_deregister_client)
#define PMIx_server_finalize (::shoal::noded::pmixdl::Fns().server_finalize)
#define PMIx_server_init (::shoal::noded::pmixdl::Fns().server_init)
#define PMIx_server_register_client (::shoal::noded::pmixdl::Fns().server_register_client)
#define PMIx_server_register_nspace (::shoal::noded::pmixdl::Fns().server_register_nspace)
#define PMIx_server_setup_fork (::shoal::noded::pmixdl::Fns().server_setup_fork)
