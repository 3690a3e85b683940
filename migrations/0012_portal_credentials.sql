CREATE TABLE `portal_credentials` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`digest` text NOT NULL,
	`kind` text NOT NULL,
	`customer_id` integer,
	`license_id` integer,
	`expires_at` text NOT NULL,
	`used_at` text,
	`created_at` text NOT NULL,
	FOREIGN KEY (`customer_id`) REFERENCES `customers`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`license_id`) REFERENCES `licenses`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `portal_credentials_digest` ON `portal_credentials` (`digest`);--> statement-breakpoint
CREATE INDEX `portal_credentials_customer` ON `portal_credentials` (`customer_id`);--> statement-breakpoint
CREATE INDEX `portal_credentials_license` ON `portal_credentials` (`license_id`);