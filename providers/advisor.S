/*
** advisor.S: the AWS Spot Instance Advisor's interruption buckets for
** us-east-1, compiled into the command for `dovetail simulate`.
*/
	.section .rodata
	.global dt__bundled_advisor
	.global dt__bundled_advisor_end
	.hidden dt__bundled_advisor
	.hidden dt__bundled_advisor_end
	.type dt__bundled_advisor, @object
dt__bundled_advisor:
	.incbin "providers/catalogs/aws-spot-advisor-us-east-1.json"
dt__bundled_advisor_end:
	.byte 0
	.section .note.GNU-stack,"",@progbits
