/*
** sim_fault.c: the simulator's faults on purpose. Built twice: into
** dovetail, where no fault is ever on, and with DT_SIM_FAULTS into
** dovetail-faults, where DOVETAIL_SIM_FAULT names the one to break.
*/
#include "sim.h"

#include <stdlib.h>
#include <string.h>

bool dt__sim_fault(const char *name) {
#ifdef DT_SIM_FAULTS
  const char *f = getenv("DOVETAIL_SIM_FAULT");
  return f && !strcmp(f, name);
#else
  (void)name;
  return false;
#endif
}
