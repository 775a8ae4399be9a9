/*
** bundled.S: the catalogs compiled into the library, so `dovetail plan`
** works with no flag and no installed data file: AWS us-east-1 (the default)
** and Azure eastus (`--catalog azure-eastus`). The Makefile sets the paths.
*/
#ifndef DT_CATALOG_PATH
#define DT_CATALOG_PATH "providers/catalogs/aws-us-east-1.json"
#endif
#ifndef DT_CATALOG_AZURE_PATH
#define DT_CATALOG_AZURE_PATH "providers/catalogs/azure-eastus.json"
#endif
	.section .rodata
	.global dt__bundled_catalog
	.global dt__bundled_catalog_end
	.hidden dt__bundled_catalog
	.hidden dt__bundled_catalog_end
	.type dt__bundled_catalog, @object
dt__bundled_catalog:
	.incbin DT_CATALOG_PATH
dt__bundled_catalog_end:
	.byte 0

	.global dt__bundled_azure
	.global dt__bundled_azure_end
	.hidden dt__bundled_azure
	.hidden dt__bundled_azure_end
	.type dt__bundled_azure, @object
dt__bundled_azure:
	.incbin DT_CATALOG_AZURE_PATH
dt__bundled_azure_end:
	.byte 0
	.section .note.GNU-stack,"",@progbits
