CREATE TABLE `admin_bootstraps` (
	`normalized_user_name` text PRIMARY KEY NOT NULL,
	`claim` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
ALTER TABLE `download_tokens` ADD `bytes_served` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `logs` ADD `category` text DEFAULT 'Service' NOT NULL;--> statement-breakpoint
CREATE INDEX `logs_category` ON `logs` (`category`);--> statement-breakpoint
ALTER TABLE `users` ADD `tokens_valid_after` integer;