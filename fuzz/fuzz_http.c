/* HTTP request bodies: any bytes as a PUT /v1/objects body (parse, read,
** key every object) and as a POST /v1/events body. */
#include "store.h"

static void count(const cJSON *o, void *ud) {
  (void)o;
  (*(size_t *)ud)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dt_error err;
  cJSON *docs = NULL;
  if (dt__request_objects((const char *)data, size, &docs, &err) == 0) {
    size_t n = 0;
    dt__each_object(docs, count, &n);
  }
  cJSON_Delete(docs);
  cJSON *e = cJSON_ParseWithLength((const char *)data, size);
  cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(e, "detail"), "instance-id"));
  cJSON_Delete(e);
  return 0;
}
