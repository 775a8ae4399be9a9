/*
** bundled.S: the default catalog (AWS us-east-1) compiled into the library,
** so `dovetail plan` works with no flag and no installed data file.
** DT_CATALOG_PATH is set by the Makefile.
*/
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
	.section .note.GNU-stack,"",@progbits
