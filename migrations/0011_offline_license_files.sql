CREATE TABLE `license_files` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`license_id` integer NOT NULL,
	`file_id` text NOT NULL,
	`machine_id` text NOT NULL,
	`client_id` text,
	`encrypted` integer DEFAULT false NOT NULL,
	`issued_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`borrow_until` text,
	`token_digest` text,
	`returned_at` text,
	`created_at` text NOT NULL,
	FOREIGN KEY (`license_id`) REFERENCES `licenses`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `license_files_license` ON `license_files` (`license_id`,`issued_at`);--> statement-breakpoint
CREATE INDEX `license_files_token` ON `license_files` (`token_digest`);--> statement-breakpoint
ALTER TABLE `license_templates` ADD `check_in_days` integer;--> statement-breakpoint
ALTER TABLE `licenses` ADD `check_in_days` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `licenses` ADD `last_check_in` text;--> statement-breakpoint
ALTER TABLE `licenses` ADD `check_in_overdue_for` text;