// GET /openapi/v3 (and slurmrestd's other spellings): the v0.0.44 OpenAPI document, embedded at
// build time so the binary needs no data file beside it.
#include <string_view>

#include "restd/router.h"

// The assembler copies the file into .rodata; CMake passes its path and makes this object
// depend on it.
asm(".section .rodata\n"
    ".global shoal_openapi_doc_begin\n"
    "shoal_openapi_doc_begin:\n"
    ".incbin \"" SHOAL_OPENAPI_PATH
    "\"\n"
    ".global shoal_openapi_doc_end\n"
    "shoal_openapi_doc_end:\n"
    ".byte 0\n"
    ".previous\n");
extern "C" const char shoal_openapi_doc_begin[];
extern "C" const char shoal_openapi_doc_end[];

namespace shoal::restd {

std::string_view OpenApiDocument() {
  return std::string_view(shoal_openapi_doc_begin,
                          static_cast<size_t>(shoal_openapi_doc_end - shoal_openapi_doc_begin));
}

void RegisterOpenApiEndpoints(Router& router) {
  Handler serve = [](const HttpRequest&, Backend&) {
    HttpResponse r;
    r.body = std::string(OpenApiDocument());
    return r;
  };
  for (const char* path : {"/openapi/v3", "/openapi", "/openapi.json"})
    router.Add(Method::kGet, path, serve);
}

}  // namespace shoal::restd
