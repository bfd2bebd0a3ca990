/* gcoll_info: prints the library's version, build options, every GCOLL_* setting
 * with its current value (from this environment) and help, and the algorithm table
 * (default size ranges, GCOLL_TUNE rules or why they are ignored). Needs no MPI job. */
#include <gcoll/gcoll.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    printf("usage: gcoll_info\nPrints gcoll's version, build options, settings and algorithms.\n");
    return 0;
  }
  if (argc > 1) {
    fprintf(stderr, "gcoll_info: unknown argument '%s' (try --help)\n", argv[1]);
    return 2;
  }
  return gcoll_print_info(stdout) == 0 ? 0 : 1;
}
