ALTER TABLE `product_releases` ADD `halt_note` text;--> statement-breakpoint
ALTER TABLE `product_releases` ADD `bundle_version` text;--> statement-breakpoint
ALTER TABLE `product_releases` ADD `minimum_system_version` text;--> statement-breakpoint
ALTER TABLE `product_releases` ADD `maximum_system_version` text;--> statement-breakpoint
ALTER TABLE `product_releases` ADD `informational_update` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `product_releases` ADD `release_notes_html` text;