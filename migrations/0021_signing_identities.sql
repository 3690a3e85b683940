ALTER TABLE `product_releases` ADD `signer_changes` text;--> statement-breakpoint
ALTER TABLE `products` ADD `windows_publisher_names` text;--> statement-breakpoint
ALTER TABLE `products` ADD `mac_team_ids` text;--> statement-breakpoint
ALTER TABLE `products` ADD `tauri_public_key` text;--> statement-breakpoint
ALTER TABLE `release_downloads` ADD `signer` text;--> statement-breakpoint
ALTER TABLE `release_downloads` ADD `team_id` text;--> statement-breakpoint
ALTER TABLE `release_downloads` ADD `signature_verified` integer;