/* State files: any bytes as the daemon's state file. A file that passes the
** shape check must be one the daemon can read every field of. */
#include "store.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dt__init();
  cJSON *root = cJSON_ParseWithLength((const char *)data, size);
  dt_error err;
  if (root && dt__state_check("state.json", root, &err) == 0) {
    const cJSON *o;
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(root, "objects")) {
      char key[DT_KEY_MAX];
      const char *why;
      if (dt__obj_key(o, key, sizeof key, &why)) abort(); /* checked above */
    }
  }
  cJSON_Delete(root);
  return 0;
}
