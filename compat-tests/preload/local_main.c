/*
 * local_main.c - loads local_ext.so with dlopen(RTLD_LOCAL), the way Python loads an MPI
 * extension module: the host MPI library then sits outside the global symbol scope, so the
 * preload's dlsym(RTLD_NEXT, "PMPI_X") finds nothing and it must fall back to
 * dlopen(soname, RTLD_NOLOAD). This program itself links no MPI.
 * Usage: local_main path/to/local_ext.so
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s local_ext.so\n", argv[0]);
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("FAIL local_main: dlopen: %s\n", dlerror());
        return 1;
    }
    int (*run)(void) = (int (*)(void))dlsym(h, "local_ext_run");
    if (!run) {
        printf("FAIL local_main: no local_ext_run\n");
        return 1;
    }
    return run();
}
