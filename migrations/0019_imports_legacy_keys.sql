CREATE TABLE `imports` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`import_id` text NOT NULL,
	`source` text NOT NULL,
	`dry_run` integer DEFAULT false NOT NULL,
	`status` text NOT NULL,
	`total` integer NOT NULL,
	`processed` integer DEFAULT 0 NOT NULL,
	`created_customers` integer DEFAULT 0 NOT NULL,
	`created_licenses` integer DEFAULT 0 NOT NULL,
	`created_activations` integer DEFAULT 0 NOT NULL,
	`skipped` integer DEFAULT 0 NOT NULL,
	`error_count` integer DEFAULT 0 NOT NULL,
	`errors` text NOT NULL,
	`unsupported` text NOT NULL,
	`done_chunks` text DEFAULT '[]' NOT NULL,
	`created_by` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `imports_import_id` ON `imports` (`import_id`);--> statement-breakpoint
ALTER TABLE `customers` ADD `source_id` text;--> statement-breakpoint
CREATE UNIQUE INDEX `customers_source_id` ON `customers` (`source_id`);--> statement-breakpoint
ALTER TABLE `license_tokens` ADD `source_id` text;--> statement-breakpoint
CREATE UNIQUE INDEX `license_tokens_source_id` ON `license_tokens` (`source_id`);--> statement-breakpoint
ALTER TABLE `licenses` ADD `legacy_key_digest` text;--> statement-breakpoint
ALTER TABLE `licenses` ADD `legacy_key_hint` text;--> statement-breakpoint
ALTER TABLE `licenses` ADD `source_id` text;--> statement-breakpoint
CREATE UNIQUE INDEX `licenses_legacy_key` ON `licenses` (`legacy_key_digest`);--> statement-breakpoint
CREATE UNIQUE INDEX `licenses_source_id` ON `licenses` (`source_id`);--> statement-breakpoint
ALTER TABLE `products` ADD `source_id` text;--> statement-breakpoint
CREATE UNIQUE INDEX `products_source_id` ON `products` (`source_id`);