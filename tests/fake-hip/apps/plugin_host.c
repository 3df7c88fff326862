/* Loads the plugin named on the command line with dlopen(RTLD_NOW | RTLD_LOCAL) and runs it. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: plugin_host PLUGIN.so\n");
    return 2;
  }
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "plugin_host: %s\n", dlerror());
    return 2;
  }
  int (*run)(void) = (int (*)(void))dlsym(h, "plugin_run");
  return run ? run() : 2;
}
