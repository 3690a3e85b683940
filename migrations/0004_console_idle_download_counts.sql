ALTER TABLE `api_keys` ADD `last_used_at` text;--> statement-breakpoint
ALTER TABLE `release_downloads` ADD `download_count` integer DEFAULT 0 NOT NULL;